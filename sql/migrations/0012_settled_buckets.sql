-- 0012: settled rows in time buckets. A statement that settles a row inserts it into
-- jobs.job_done_now, an inheritance child of jobs.job_done (so every read of jobs.job or
-- jobs.job_done still sees it); the maintenance leader seals the bucket when it has been open for
-- its width (renamed jobs.job_done_<n>, a fresh jobs.job_done_now opened in the same transaction)
-- and drops a sealed bucket once every row in it is past its retention, moving the dead letters
-- still within theirs into the open bucket first. A drop removes a bucket's rows, their index
-- entries and their heap in one catalog operation: no row-by-row delete, no dead versions, no
-- vacuum, at any rate. And the open bucket's indexes hold one bucket's rows, not the whole
-- retention's: the key index and the GIN over input, whose inserts land at random leaves, keep a
-- working set the size of a bucket. docs/internals.md ("Settled buckets") has the measurements.
--
-- Without downtime: the rows already in jobs.job_done stay there (the row pruner deletes them
-- past retention, as before); the statements of this release insert into jobs.job_done_now, and a
-- worker of the previous release still inserts into jobs.job_done, read the same way.

create table jobs.job_done_bucket (
    n           bigint primary key,
    opened_at   timestamptz not null,
    sealed_at   timestamptz
);
create sequence jobs.job_done_bucket_n;

-- The open bucket jobs.job_done_now, bucket n, with the settled rows' indexes named for n (a
-- sealed bucket keeps them under its own name). The one place a bucket's indexes are spelled.
create function jobs.job_done_open(p_now timestamptz) returns bigint
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    n bigint := nextval('jobs.job_done_bucket_n');
    p text := 'job_done_' || n || '_';
    g record;
begin
    create table jobs.job_done_now () inherits (jobs.job_done);
    execute 'alter table jobs.job_done_now add constraint ' || quote_ident(p || 'pkey') || ' primary key (id)';
    execute 'create index ' || quote_ident(p || 'queue_state') || ' on jobs.job_done_now (queue, state, id desc)';
    execute 'create index ' || quote_ident(p || 'state') || ' on jobs.job_done_now (state, id desc)';
    execute 'create index ' || quote_ident(p || 'name') || ' on jobs.job_done_now (name, id desc)';
    execute 'create index ' || quote_ident(p || 'tenant') || ' on jobs.job_done_now (tenant, id desc) where tenant is not null';
    execute 'create index ' || quote_ident(p || 'key') || ' on jobs.job_done_now (idempotency_key text_pattern_ops)';
    execute 'create index ' || quote_ident(p || 'input') || ' on jobs.job_done_now using gin (input jsonb_path_ops)';
    execute 'create index ' || quote_ident(p || 'finished_at') || ' on jobs.job_done_now (finished_at)';
    execute 'create index ' || quote_ident(p || 'dead') || ' on jobs.job_done_now'
            ' (name, error_code, stop_reason, tenant, finished_at) include (queue) where state = ''dead''';
    execute 'create index ' || quote_ident(p || 'dead_code') || ' on jobs.job_done_now (error_code, id desc) where state = ''dead''';
    execute 'create statistics jobs.' || quote_ident(p || 'mcv') || ' (mcv) on queue, state from jobs.job_done_now';
    -- The grants of jobs.job_done, whoever made them (sql/roles/roles.sql's default privileges,
    -- or an operator's own grants on the tables a migration made): a role that may settle a row
    -- today may still after a seal.
    for g in select a.grantee, a.privilege_type
             from pg_class c, aclexplode(c.relacl) a
             where c.oid = 'jobs.job_done'::regclass and a.grantee <> c.relowner loop
        execute 'grant ' || g.privilege_type || ' on jobs.job_done_now to '
                || case when g.grantee = 0 then 'public' else g.grantee::regrole::text end;
    end loop;
    insert into jobs.job_done_bucket (n, opened_at) values (n, p_now);
    return n;
end $$;

-- Seal the open bucket and open the next; both names change in one transaction, so a settling
-- statement waiting on the rename inserts into the new jobs.job_done_now. A reader holding the
-- open bucket (a long query of jobs.job) would make the rename wait and every ack queue behind
-- it: the rename gives up after lock_timeout instead, and the leader tries again on its next pass.
create function jobs.job_done_seal(p_now timestamptz, p_lock_timeout text) returns bigint
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    sealed bigint;
begin
    perform set_config('lock_timeout', p_lock_timeout, true);
    select n into strict sealed from jobs.job_done_bucket where sealed_at is null;
    lock table jobs.job_done_now in access exclusive mode;
    execute 'alter table jobs.job_done_now rename to ' || quote_ident('job_done_' || sealed);
    update jobs.job_done_bucket set sealed_at = p_now where n = sealed;
    perform jobs.job_done_open(p_now);
    return sealed;
end $$;

-- Drop sealed bucket p_n if every row in it is past its retention: completed and cancelled rows
-- finished before p_before, dead letters before p_dead_before, except the dead letters still
-- within theirs, which move to the open bucket first. Their jobs' attempts, steps and history go
-- with them (no foreign key cascades them, as the pruner says). Answers the rows dropped,
-- or null when the bucket is not yet past retention (nothing changes).
create function jobs.job_done_drop(p_n bigint, p_before timestamptz, p_dead_before timestamptz,
                                   p_lock_timeout text) returns bigint
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    t text := 'only jobs.' || quote_ident('job_done_' || p_n);
    young boolean;
    dropped bigint;
begin
    perform set_config('lock_timeout', p_lock_timeout, true);
    execute 'select exists (select 1 from ' || t || ' where state in (''completed'', ''cancelled'')'
            ' and finished_at >= $1)' into young using p_before;
    if young then
        return null;
    end if;
    execute 'lock table ' || t || ' in access exclusive mode';
    execute 'insert into jobs.job_done_now select * from ' || t
            || ' where state = ''dead'' and finished_at >= $1' using p_dead_before;
    execute 'with gone as (select id from ' || t || ' where state <> ''dead'' or finished_at < $1),'
            ' a as (delete from jobs.attempt where job_id in (select id from gone)),'
            ' s as (delete from jobs.step where job_id in (select id from gone)),'
            ' h as (delete from jobs.history where job_id in (select id from gone))'
            ' select count(*) from gone' into dropped using p_dead_before;
    execute 'drop table jobs.' || quote_ident('job_done_' || p_n);
    delete from jobs.job_done_bucket where n = p_n;
    delete from jobs.meta where key = 'index_baseline:jobs.job_done_' || p_n || '_input';  -- index upkeep's
    return dropped;
end $$;

-- They run as the schema's owner (security definer) so a leader logged in as jobs_writer may
-- rename, create and drop the buckets; so only the roles granted them may call them, never any
-- role that can reach the schema (a drop with a later cut-off would delete what it names).
revoke all on function jobs.job_done_open(timestamptz) from public;
revoke all on function jobs.job_done_seal(timestamptz, text) from public;
revoke all on function jobs.job_done_drop(bigint, timestamptz, timestamptz, text) from public;

select jobs.job_done_open(now());
