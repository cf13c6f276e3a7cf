-- 0017: the dead letters counted per group as they come and go. The dead-letter view grouped
-- every dead row on each refresh (an index-only scan of them all): 12 ms at 30,000 dead letters,
-- 340-830 ms at 1,000,000, past the console's budget in the incident that makes them. jobs.dead_group
-- holds, per (name, queue, error code, stop reason, tenant), how many dead rows jobs.job_done and
-- its buckets hold and the first and last time one finished; row triggers on each of those tables
-- keep it as a dead row enters (a nack, the rescuer's last lost attempt) or leaves (a retry, a
-- discard, the pruner), and a dropped bucket's dead rows leave in jobs.job_done_drop. The view
-- reads it when its filter names only these columns (engine/drivers/postgres/introspect.py), and
-- adds the dead rows an older release settled in place in jobs.job, which no trigger counts.
--
-- Only a dead row runs the triggers' function: a completion's insert evaluates a WHEN clause and
-- nothing more. A row that leaves as its group's first or last finish reads the group's bounds
-- again from the bucket indexes over dead rows. Each dead row writes its group's row once, so a
-- transaction that moves many rows of one group walks a chain of that row's versions as long as
-- the rows it moved so far: the engine's bulk statements stay within a few thousand rows (bulk
-- actions 500 a batch, the pruner 1,000), and a dropped bucket's young dead letters move to the
-- open bucket without being counted out and in again.
--
-- Without downtime: the triggers are made and the groups counted in this one transaction, with
-- jobs.job_done and its buckets locked against writes while it counts (an index-only scan of the
-- dead rows: tens of milliseconds at the usual mix, about a second at a million dead letters), so
-- no row is counted twice or missed; acks and retries wait that long. A worker of the previous
-- release settles into the same tables, so its rows are counted too.

create table jobs.dead_group (
    name        text not null,
    queue       text not null,
    error_code  text,
    stop_reason text,
    tenant      text,
    n           bigint not null,
    first_seen  timestamptz not null,
    last_seen   timestamptz not null,
    constraint dead_group_key unique nulls not distinct (name, queue, error_code, stop_reason, tenant)
);

-- The first and last finish of a group's dead rows, read again from the dead-letter index of
-- each table of jobs.job_done (a min and a max under equality on its key columns). Its own
-- statement, so it sees what other transactions committed while this one waited on the group's row.
create function jobs.dead_group_bounds(p_name text, p_queue text, p_code text, p_reason text, p_tenant text)
returns void
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    lo timestamptz;
    hi timestamptz;
begin
    execute 'select min(finished_at), max(finished_at) from jobs.job_done where state = ''dead'' and name = $1'
            ' and queue = $2 and ' || case when p_code is null then 'error_code is null' else 'error_code = $3' end
            || ' and ' || case when p_reason is null then 'stop_reason is null' else 'stop_reason = $4' end
            || ' and ' || case when p_tenant is null then 'tenant is null' else 'tenant = $5' end
        into lo, hi using p_name, p_queue, p_code, p_reason, p_tenant;
    update jobs.dead_group set first_seen = lo, last_seen = hi
    where name = p_name and queue = p_queue and error_code is not distinct from p_code
      and stop_reason is not distinct from p_reason and tenant is not distinct from p_tenant
      and lo is not null;
end $$;

-- Dead rows of group g gone (g.n of them, finished from g.first_seen to g.last_seen): the count
-- goes down, a group left empty is deleted, and one whose first or last finish went with them
-- reads its bounds again. A statement that deletes many rows fires their triggers after all its
-- deletes, so the first bound's trigger reads the bounds past every row it deleted, and the later
-- rows, no longer a bound, read nothing.
create function jobs.dead_group_leave(g jobs.dead_group) returns void
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    left_n bigint;
    lo timestamptz;
    hi timestamptz;
begin
    update jobs.dead_group d set n = d.n - g.n
    where d.name = g.name and d.queue = g.queue and d.error_code is not distinct from g.error_code
      and d.stop_reason is not distinct from g.stop_reason and d.tenant is not distinct from g.tenant
    returning d.n, d.first_seen, d.last_seen into left_n, lo, hi;
    if left_n <= 0 then
        delete from jobs.dead_group d
        where d.name = g.name and d.queue = g.queue and d.error_code is not distinct from g.error_code
          and d.stop_reason is not distinct from g.stop_reason and d.tenant is not distinct from g.tenant;
    elsif g.first_seen = lo or g.last_seen = hi then
        perform jobs.dead_group_bounds(g.name, g.queue, g.error_code, g.stop_reason, g.tenant);
    end if;
end $$;

-- A dead row in or out of a table of jobs.job_done (an update as both).
create function jobs.dead_group_count() returns trigger
language plpgsql security definer set search_path = pg_catalog, jobs as $$
begin
    if tg_op <> 'INSERT' and old.state = 'dead' then
        perform jobs.dead_group_leave(row(old.name, old.queue, old.error_code, old.stop_reason, old.tenant, 1,
                                          old.finished_at, old.finished_at)::jobs.dead_group);
    end if;
    if tg_op <> 'DELETE' and new.state = 'dead' then
        insert into jobs.dead_group as d
        values (new.name, new.queue, new.error_code, new.stop_reason, new.tenant, 1,
                coalesce(new.finished_at, new.updated_at), coalesce(new.finished_at, new.updated_at))
        on conflict on constraint dead_group_key do update
        set n = d.n + 1, first_seen = least(d.first_seen, excluded.first_seen),
            last_seen = greatest(d.last_seen, excluded.last_seen);
    end if;
    return null;
end $$;

-- The triggers of one table of jobs.job_done: the one place they are spelled (the migration's
-- tables below, and every bucket jobs.job_done_open makes). A move between two of its tables
-- (jobs.job_done_drop's young dead letters) sets jobs.dead_group_moving for its statement, and
-- counts nothing.
create function jobs.dead_group_triggers(p_table regclass) returns void
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    counting text := ' and current_setting(''jobs.dead_group_moving'', true) is distinct from ''on'')';
begin
    execute 'create trigger dead_group_in after insert on ' || p_table::text
            || ' for each row when (new.state = ''dead''' || counting || ' execute function jobs.dead_group_count()';
    execute 'create trigger dead_group_out after delete on ' || p_table::text
            || ' for each row when (old.state = ''dead''' || counting || ' execute function jobs.dead_group_count()';
    execute 'create trigger dead_group_change after update on ' || p_table::text
            || ' for each row when ((old.state = ''dead'' or new.state = ''dead'')' || counting
            || ' execute function jobs.dead_group_count()';
end $$;

-- 0012's jobs.job_done_open, and the triggers on the bucket it opens.
create or replace function jobs.job_done_open(p_now timestamptz) returns bigint
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
    perform jobs.dead_group_triggers('jobs.job_done_now');
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

-- 0012's jobs.job_done_drop, with the dead letters' counts: its young dead letters move to the
-- open bucket uncounted (they stay in their groups), and a dropped table fires no delete trigger,
-- so the rest leave their groups here, grouped in one read before the drop and left after it (so a
-- bound read again sees the tables that remain).
create or replace function jobs.job_done_drop(p_n bigint, p_before timestamptz, p_dead_before timestamptz,
                                              p_lock_timeout text) returns bigint
language plpgsql security definer set search_path = pg_catalog, jobs as $$
declare
    t text := 'only jobs.' || quote_ident('job_done_' || p_n);
    young boolean;
    dropped bigint;
    g jobs.dead_group;
    gone_groups jobs.dead_group[];
begin
    perform set_config('lock_timeout', p_lock_timeout, true);
    execute 'select exists (select 1 from ' || t || ' where state in (''completed'', ''cancelled'')'
            ' and finished_at >= $1)' into young using p_before;
    if young then
        return null;
    end if;
    execute 'lock table ' || t || ' in access exclusive mode';
    perform set_config('jobs.dead_group_moving', 'on', true);
    execute 'insert into jobs.job_done_now select * from ' || t
            || ' where state = ''dead'' and finished_at >= $1' using p_dead_before;
    perform set_config('jobs.dead_group_moving', 'off', true);
    execute 'with gone as (select id from ' || t || ' where state <> ''dead'' or finished_at < $1),'
            ' a as (delete from jobs.attempt where job_id in (select id from gone)),'
            ' s as (delete from jobs.step where job_id in (select id from gone)),'
            ' h as (delete from jobs.history where job_id in (select id from gone))'
            ' select count(*) from gone' into dropped using p_dead_before;
    execute 'select array(select row(name, queue, error_code, stop_reason, tenant, count(*), min(finished_at),'
            ' max(finished_at))::jobs.dead_group from ' || t || ' where state = ''dead'' and finished_at < $1'
            ' group by name, queue, error_code, stop_reason, tenant'
            ' order by name, queue, error_code, stop_reason, tenant)' into gone_groups using p_dead_before;
    execute 'drop table jobs.' || quote_ident('job_done_' || p_n);
    foreach g in array gone_groups loop
        perform jobs.dead_group_leave(g);
    end loop;
    delete from jobs.job_done_bucket where n = p_n;
    delete from jobs.meta where key = 'index_baseline:jobs.job_done_' || p_n || '_input';  -- index upkeep's
    return dropped;
end $$;

revoke all on function jobs.job_done_drop(bigint, timestamptz, timestamptz, text) from public;
revoke all on function jobs.job_done_open(timestamptz) from public;
revoke all on function jobs.dead_group_triggers(regclass) from public;
revoke all on function jobs.dead_group_bounds(text, text, text, text, text) from public;
revoke all on function jobs.dead_group_leave(jobs.dead_group) from public;

-- The tables of jobs.job_done as they are now (itself, the sealed buckets, the open one), locked
-- against writes until this transaction commits, then counted.
lock table jobs.job_done in share row exclusive mode;
select jobs.dead_group_triggers(c.oid)
from pg_class c
where c.oid = 'jobs.job_done'::regclass
   or c.oid in (select inhrelid from pg_inherits where inhparent = 'jobs.job_done'::regclass);

-- Index-only over each table's dead-letter index; a dead row without a finish time (none the
-- engine writes) counts from its last update, as the triggers count it.
insert into jobs.dead_group
select name, queue, error_code, stop_reason, tenant, sum(n), min(first_seen), max(last_seen)
from (
    select name, queue, error_code, stop_reason, tenant, count(*) as n, min(finished_at) as first_seen,
           max(finished_at) as last_seen
    from jobs.job_done
    where state = 'dead' and finished_at is not null
    group by name, queue, error_code, stop_reason, tenant
    union all
    select name, queue, error_code, stop_reason, tenant, count(*), min(updated_at), max(updated_at)
    from jobs.job_done
    where state = 'dead' and finished_at is null
    group by name, queue, error_code, stop_reason, tenant
) counted
group by name, queue, error_code, stop_reason, tenant;

-- Whoever may read jobs.job_done may read its counts (the dead-letter view and the queue gauges
-- read them): its readers' grants, whoever made them (sql/roles/roles.sql's default privileges
-- grant jobs_reader already; an operator's own grants on the tables a migration made do not).
do $$
declare
    g record;
begin
    for g in select distinct a.grantee
             from pg_class c, aclexplode(c.relacl) a
             where c.oid = 'jobs.job_done'::regclass and a.grantee <> c.relowner and a.privilege_type = 'SELECT' loop
        execute 'grant select on jobs.dead_group to '
                || case when g.grantee = 0 then 'public' else g.grantee::regrole::text end;
    end loop;
end $$;
