-- The load benchmarks' own statements (bench/soak): a backlog of ready jobs seeded in one
-- statement, and the counts the drain polls.

-- name: soak_seed_ready :exec
-- %(n)s ready no-op jobs of bench.workload's queue, due now, ids in order (UUIDv7-shaped). Their
-- idempotency keys, by %(keys)s: 'decimal' seed:1, seed:2, ... (text order is not the claim order:
-- seed:1000 and seed:1001 are ~111 keys apart in the dedupe index at 1,000,000 rows, adjacent at
-- 10,000); 'padded' seed:0000001, ... (text order is the claim order at any depth, as UUIDv7 or
-- fixed-width keys); 'random' an md5 of the number (no order at any depth, as UUIDv4 keys).
insert into jobs.job (id, name, queue, idempotency_key, input, state, priority, attempt, max_attempts,
                      run, run_at, created_at, updated_at)
select ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench.noop', 'bench',
       'seed:' || case %(keys)s::text when 'padded' then lpad(g::text, 7, '0') when 'random' then md5(g::text)
                                      else g::text end,
       jsonb_build_object('i', g), 'ready', 0, 0, 1, 0, %(now)s, %(now)s, %(now)s
from generate_series(1, %(n)s) as g;

-- name: soak_vacuum :exec
-- The seeded table vacuumed and analysed, as a table that has lived a while would be.
vacuum (analyze) jobs.job;

-- name: soak_settled :one
-- Jobs no longer waiting to be claimed or running: what the drain has got through.
select count(*)::bigint as n from jobs.job where state in ('completed', 'dead');

-- name: soak_sizes :many
-- The jobs tables' heaps and each of their indexes, in bytes: which of them grows.
select 'heap' as name, pg_relation_size('jobs.job'::regclass)::bigint as bytes
union all
select 'job_done heap', pg_relation_size('jobs.job_done'::regclass)::bigint
union all
select i.relname::text, pg_relation_size(i.oid)::bigint
from pg_index x join pg_class i on i.oid = x.indexrelid
where x.indrelid in ('jobs.job'::regclass, 'jobs.job_done'::regclass);

-- name: soak_finished_nth :one
-- When the n-th completion (0-based, in completion order) was acked: the drain's rate is read
-- from the workers' own stamps, free of the poll's granularity.
select finished_at from jobs.job
where state in ('completed', 'cancelled', 'dead')
order by finished_at
offset %(n)s limit 1;
