-- The outbox benchmark's own statements (bench/outbox.py, bench only): an application table to
-- write beside the stage, and the finish lines it polls.

-- name: outbox_bench_install :exec
-- The "application's" table: what a checkout writes in the transaction that stages its job.
create table if not exists bench_order (id bigint primary key, total integer not null);

-- name: outbox_bench_order :exec
-- One application row.
insert into bench_order (id, total) values (%(id)s, 1);

-- name: outbox_bench_orders :exec
-- %(n)s application rows in one statement, from %(first)s.
insert into bench_order (id, total) select g, 1 from generate_series(%(first)s::bigint, %(first)s::bigint + %(n)s - 1) g;

-- name: outbox_bench_unpublished :one
-- Whether any staged row is still unpublished (1) or none is (0): polled every 10 ms, so exists.
select exists (select 1 from jobs.outbox where published_at is null)::int as n;

-- name: outbox_bench_relays :one
-- Relays alive (their heartbeat rows).
select count(*)::int as n from jobs.outbox_relay;

-- name: outbox_bench_listen :exec
-- The latency probe waits for the NOTIFY a published job's insert sends at commit.
listen jobs_enqueue;
