-- Seeding for the outbox projections (python -m bench.projections): an outbox a million rows
-- behind, made set-based. Unpublished row g is staged 3 ms x g before %(now)s (a million span
-- ~50 minutes); every 500th of them is held by one of three live relays' claims (a lease ending
-- 10 minutes after %(now)s: a seed slowed by a busy machine still finds them held when the
-- figures are read), every 10,000th has failed to publish (attempts, last error). Published rows
-- (the audit trail) are staged and published one every 10 ms back from %(now)s: the last hour
-- holds ~360,000 of them.

-- name: bench_seed_outbox_unpublished :exec
-- Unpublished rows %(first)s..%(last)s.
insert into jobs.outbox (id, staged_at, name, queue, tenant, idempotency_key, input, run_at, max_attempts,
                         priority, claimed_at, claimed_by, claim_token, lease_until, attempts, last_error,
                         failed_at)
select
       -- include: uuid7_at
       , at, 'job_' || (g %% 50), 'q' || (g %% 5),
       case when g %% 21 = 0 then null else 't' || (g %% 20) end,
       'ob:' || g, jsonb_build_object('order', g), null, 3, 0,
       case when held then %(now)s::timestamptz end,
       case when held then 'bench-relay-' || (g %% 3) end,
       case when held then ('00000000-0000-4000-8000-00000000000' || (g %% 3))::uuid end,
       case when held then %(now)s::timestamptz + interval '10 minutes' end,
       case when failing then 2 else 0 end,
       case when failing then 'X_BENCH_PUBLISH: unique violation on job_dedupe_live_v3' end,
       case when failing then %(now)s::timestamptz - interval '5 seconds' end
from (
    select g, %(now)s::timestamptz - g * interval '3 milliseconds' as at,
           g %% 500 = 0 as held, g %% 10000 = 7 as failing
    from generate_series(%(first)s::int, %(last)s::int) as g
) s;

-- name: bench_seed_outbox_published :exec
-- Published rows %(first)s..%(last)s, each with the job id it became.
insert into jobs.outbox (id, staged_at, name, queue, tenant, idempotency_key, input, max_attempts, priority,
                         claimed_at, claimed_by, claim_token, published_at, job_id)
select
       -- include: uuid7_at
       , at, 'job_' || (g %% 50), 'q' || (g %% 5), null, 'obp:' || g,
       jsonb_build_object('order', g), 3, 0, at, 'bench-relay-' || (g %% 3),
       ('00000000-0000-4000-8000-0000000001' || lpad((g %% 100)::text, 2, '0'))::uuid,
       at + interval '5 milliseconds',
       -- include: uuid7_at
from (
    select g, %(now)s::timestamptz - g * interval '10 milliseconds' as at
    from generate_series(%(first)s::int, %(last)s::int) as g
) s;

-- name: bench_seed_outbox_relays :exec
-- The three relays alive.
insert into jobs.outbox_relay (id, started_at, heartbeat_at)
select 'bench-relay-' || r, %(now)s::timestamptz - interval '1 hour', %(now)s
from generate_series(0, 2) as r
on conflict (id) do nothing;

-- name: bench_vacuum_outbox :exec
-- Planner statistics and the visibility map, as autovacuum leaves a live system.
vacuum analyze jobs.outbox;

-- name: bench_outbox_held_id :one
-- One row a live relay holds.
select id from jobs.outbox where published_at is null and claim_token is not null limit 1;

-- name: bench_outbox_waiting_id :one
-- The newest unpublished row: the last in line.
select id from jobs.outbox where published_at is null order by staged_at desc, id desc limit 1;
