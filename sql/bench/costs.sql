-- The cost suite's reads (bench/costs.py): statements, commits and WAL around one measured run,
-- read on the admin connection (database postgres, where the extension is installed; its
-- counters are the whole server's). The measured systems connect as postgres, the harness's own
-- poll as bench_observer, so the poll's statements are told apart by role.

-- name: costs_install :exec
-- What the suite reads: pg_stat_statements (loaded by shared_preload_libraries) and the
-- harness's own role.
create extension if not exists pg_stat_statements;
do $$ begin
    if not exists (select 1 from pg_roles where rolname = 'bench_observer') then
        create role bench_observer login superuser;
    end if;
end $$;

-- name: costs_reset :exec
-- Every statement counter to zero before a measured run.
select pg_stat_statements_reset();

-- name: costs_read :one
-- For database %(db)s since the last reset: the systems' statements (every role but the
-- harness's), the harness's (each one its own transaction), the database's commits so far and
-- the WAL position.
select coalesce(sum(s.calls) filter (where r.rolname <> 'bench_observer'), 0)::bigint as statements,
       coalesce(sum(s.calls) filter (where r.rolname = 'bench_observer'), 0)::bigint as harness,
       (select xact_commit from pg_stat_database where datname = %(db)s)::bigint as commits,
       pg_current_wal_lsn()::text as lsn,
       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint as wal
from pg_stat_statements s
join pg_roles r on r.oid = s.userid
where s.dbid = (select oid from pg_database where datname = %(db)s);
