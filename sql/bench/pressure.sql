-- The pressure bench's reads and pressure sessions (bench/pressure.py). Each read works on the
-- one-table schema too (before 0010_settled_rows), so the same harness measures either.

-- name: pressure_completed :one
-- Jobs completed in [%(lo)s, %(hi)s), by their acks' own stamps.
select count(*)::int as n from jobs.job
where state = 'completed' and finished_at >= %(lo)s and finished_at < %(hi)s;

-- name: pressure_depth :one
-- Jobs waiting to be claimed now (ready ones), up to a million.
select count(*)::int as n from (select 1 from jobs.job where state = 'ready' limit 1000000) r;

-- name: pressure_dead_tuples :many
-- Dead and live tuples of the jobs tables, as the statistics collector has them (about a second
-- behind): jobs.job, and the settled side summed (jobs.job_done and its buckets, where they exist).
select case when relid = 'jobs.job'::regclass then 'job' else 'job_done' end as name,
       sum(n_dead_tup)::bigint as dead, sum(n_live_tup)::bigint as live,
       sum(pg_relation_size(relid))::bigint as heap_bytes, sum(pg_indexes_size(relid))::bigint as index_bytes,
       sum(autovacuum_count)::int as autovacuums
from pg_stat_user_tables
where relid = 'jobs.job'::regclass or relid = to_regclass('jobs.job_done')
   or relid in (select inhrelid from pg_inherits where inhparent = to_regclass('jobs.job_done'))
group by 1
order by 1;

-- name: pressure_claim_wait :one
-- The median and 99th percentile, in ms, of how long the jobs completed in [%(lo)s, %(hi)s)
-- waited from due (run_at) to claimed.
select percentile_disc(0.5) within group (order by extract(epoch from claimed_at - run_at) * 1000) as p50,
       percentile_disc(0.99) within group (order by extract(epoch from claimed_at - run_at) * 1000) as p99
from jobs.job
where state = 'completed' and finished_at >= %(lo)s and finished_at < %(hi)s;

-- name: pressure_hold_xid :one
-- An idle-in-transaction session's first statement: takes a transaction id, so the xmin horizon
-- stays at it (no row version made after it can be removed) while the session idles.
select txid_current()::text as xid;

-- name: pressure_read :one
-- One read of a long REPEATABLE READ reader (its snapshot is the transaction's first one): of a
-- small table, so the reader's own cost stays the same however much the jobs tables bloat (a
-- count of the live jobs here grew with their dead versions until the four readers took the
-- machine's two cores); what it does to the queue is hold its snapshot.
select count(*)::int as n from jobs.queue;

-- name: pressure_server_counters :one
-- The server's cumulative counters the held scenario reads each minute (their deltas per minute;
-- PostgreSQL 17 and later, the embedded server's): buffers read from outside the buffer cache and
-- found in it, checkpoints begun, buffers a client backend had to write itself, WAL bytes and
-- full-page images written.
select (select blks_read from pg_stat_database where datname = current_database())::bigint as blks_read,
       (select blks_hit from pg_stat_database where datname = current_database())::bigint as blks_hit,
       (select num_timed + num_requested from pg_stat_checkpointer)::bigint as checkpoints,
       (select coalesce(sum(writes), 0) from pg_stat_io where backend_type = 'client backend')::bigint
           as buffers_backend,
       (select wal_bytes from pg_stat_wal)::bigint as wal_bytes,
       (select wal_fpi from pg_stat_wal)::bigint as wal_fpi;

-- name: pressure_statements_install :exec
-- The held scenario's statement counters (`--statements`: pg_stat_statements loaded by
-- shared_preload_libraries, with planning tracked).
create extension if not exists pg_stat_statements;

-- name: pressure_statements :many
-- Every statement's counters so far, for the held scenario's per-minute deltas: a statement's
-- plans against its calls tell a custom plan (planned each call) from a cached generic one.
select queryid::text as id, regexp_replace(left(query, 200), '\s+', ' ', 'g') as query,
       calls::bigint as calls, total_exec_time::float8 as exec_ms, plans::bigint as plans,
       total_plan_time::float8 as plan_ms, shared_blks_hit::bigint as hits
from pg_stat_statements
where dbid = (select oid from pg_database where datname = current_database());
