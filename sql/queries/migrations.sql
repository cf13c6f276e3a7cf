-- The migration runner's statements (engine/drivers/postgres/migrate.py). The migrations themselves
-- are sql/migrations/NNNN_name.sql, applied in order, each in its own transaction.

-- name: migration_server_check :exec
-- The oldest server jobs supports: PostgreSQL 15 (the oldest upstream still supports, and the
-- oldest the suite runs on; 18 is the one it is written for). Raised before anything is written,
-- by `jobsctl migrate` and first thing in the script `jobsctl migrate --sql` prints, with SQLSTATE
-- 0A000 (feature_not_supported), which the runner reports as X_SERVER_UNSUPPORTED.
do $$
begin
    if current_setting('server_version_num')::int < 150000 then
        raise exception using errcode = 'feature_not_supported',
            message = 'jobs needs PostgreSQL 15 or later; this server runs ' || current_setting('server_version');
    end if;
end
$$;

-- name: migration_lock :exec
-- Serialise migrators for the transaction (the key 0.1's `jobsctl install` took, so the two never interleave).
select pg_advisory_xact_lock(7201100);

-- name: migration_bootstrap :exec
-- The table that records applied migrations, and the baseline: a database installed by 0.1's
-- schema.sql (jobs.meta schema_version 3, before this table existed) already holds 0001.
-- Idempotent; `jobsctl migrate --sql` prints it too, so a database migrated by another tool agrees.
create schema if not exists jobs;
create table if not exists jobs.migration (
    version    integer primary key,
    name       text not null,
    checksum   text,                     -- sha256 of the file as applied; null for a baseline
    applied_at timestamptz not null default now(),
    method     text not null check (method in ('migrate', 'sql', 'baseline'))
);
do $$
begin
    if to_regclass('jobs.meta') is not null and not exists (select from jobs.migration) then
        if exists (select from jobs.meta where key = 'schema_version' and value = '3') then
            insert into jobs.migration (version, name, checksum, method) values (1, 'initial', null, 'baseline');
        end if;
    end if;
end
$$;

-- name: migration_presence :one
-- Which of the runner's tables exist: reading a missing one would abort the transaction.
select to_regclass('jobs.migration') is not null as has_migration,
       to_regclass('jobs.meta') is not null as has_meta;

-- name: migration_applied :many
-- The applied migrations, in order.
select version, name, checksum, applied_at, method from jobs.migration order by version;

-- name: migration_record :exec
-- Record one applied migration (method: migrate, or sql when printed for another tool).
insert into jobs.migration (version, name, checksum, method)
values (%(version)s, %(name)s, %(checksum)s, %(method)s);

-- name: job_done_presence :one
-- Whether 0010_settled_rows has made jobs.job_done (the rows it moves go there).
select to_regclass('jobs.job_done') is not null as present;

-- name: migration_schema_owner :one
-- The role that owns the jobs schema (null before it exists): who a refused migrator is told
-- applies what is pending. pg_namespace is readable by every role.
select (select pg_get_userbyid(nspowner) from pg_namespace where nspname = 'jobs') as owner;
