-- Seeding for the console bench (python -m bench.console): the mix the projections bench uses
-- (95% completed, 3% dead, 2% live; 50 job names, 20 tenants, 5 queues),
-- made set-based so a million rows take seconds, not minutes.

-- name: console_bench_seed_jobs :exec
-- Insert rows %(first)s..%(last)s, one every 2 seconds back from %(now)s (UUIDv7 ids in that order).
insert into jobs.job (id, name, queue, tenant, idempotency_key, input, result, state, priority, attempt,
                      max_attempts, run, run_at, created_at, updated_at, claimed_by, claimed_at,
                      lease_until, finished_at, last_error, error_code, stop_reason, wait)
select
       -- include: uuid7_at
       , 'job_' || (g %% 50), 'q' || (g %% 5),
       case when g %% 21 = 0 then null else 't' || (g %% 20) end,
       'k:' || g, jsonb_build_object('n', g, 'invoice_id', g %% 100000),
       case when kind = 'completed' then jsonb_build_object('ok', true) end,
       state, 0,
       case when state in ('ready', 'delayed', 'parked', 'suspended') then 0
            when state = 'dead' and g %% 2 = 0 then 1 else 3 end,
       3,
       case when state in ('ready', 'delayed', 'parked', 'suspended') then 0 else 3 end,
       case when state = 'delayed' then %(now)s::timestamptz + interval '1 hour' else at end,
       at, at,
       case when state = 'running' then 'bench-worker' end,
       case when state = 'running' then %(now)s::timestamptz end,
       case when state = 'running' then %(now)s::timestamptz + interval '30 seconds' end,
       case when state in ('completed', 'dead') then at + interval '1 second' end,
       case when state = 'dead' then 'X_BENCH_' || (g %% 7) || ': failed [stop: '
            || case when g %% 2 = 0 then 'terminal at attempt 1' else 'attempts-exhausted at attempt 3' end || ' of 3]' end,
       case when state = 'dead' then 'X_BENCH_' || (g %% 7) end,
       case when state = 'dead' then case when g %% 2 = 0 then 'terminal' else 'attempts-exhausted' end end,
       case when state = 'suspended' then jsonb_build_object('kind', 'sleep', 'until', %(now)s::timestamptz + interval '1 day')
            when state = 'parked' then jsonb_build_object('kind', 'limit', 'key', 'concurrency:job_' || (g %% 50)) end
from (
    select g, %(now)s::timestamptz - g * interval '2 seconds' as at,
           case when g %% 100 < 95 then 'completed' when g %% 100 < 98 then 'dead' else 'live' end as kind
    from generate_series(%(first)s::int, %(last)s::int) as g
) s,
lateral (select case when kind = 'live' then (array['ready', 'delayed', 'running', 'suspended', 'parked'])[1 + g / 100 %% 5]
                     else kind end as state) st;

-- name: console_bench_analyze :exec
-- Fresh planner statistics after the bulk insert, as autovacuum would have them on a live system.
analyze jobs.job, jobs.job_done;
