-- Seeding for the projections bench (python -m bench.projections): a production-like mix, made
-- set-based (generate_series) so a million rows take seconds. One row every 2 seconds back from
-- %(now)s, so the last hour holds ~1,700 completions; 95% completed, 3% dead (both stop
-- reasons), 2% spread over the live states; 50 names, 20 tenants (every 21st row none), 5 queues.
-- A backlog (bench_seed_jobs' %(live)s past 2): that many percent of the rows live, the 2% spread
-- over the live states as always and the rest ready, the settled ones 95:3 completed to dead.

-- fragment: uuid7_at
-- The id of a row made at `at`: a UUIDv7 spelled out (the time's milliseconds over the first six
-- bytes of a random UUID, the version bits set to 7) rather than PostgreSQL 18's uuidv7(), so the
-- seeds of every file of sql/bench run on older servers too (JOBS_PG_BINARIES=system).
encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from at) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid

-- name: bench_seed_jobs :exec
-- Insert job rows %(first)s..%(last)s (UUIDv7 ids minted for each row's own time), %(live)s percent
-- of them live (2: the mix above).
insert into jobs.job (id, name, queue, tenant, idempotency_key, input, result, state, priority, attempt,
                      max_attempts, run, run_at, created_at, updated_at, claimed_by, claimed_at,
                      lease_until, finished_at, last_error, error_code, stop_reason, wait)
select
       -- include: uuid7_at
       , 'job_' || (g %% 50), 'q' || (g %% 5),
       case when g %% 21 = 0 then null else 't' || (g %% 20) end,
       'k:' || g, jsonb_build_object('n', g, 'invoice_id', g %% 100000),
       case when state = 'completed' then jsonb_build_object('ok', true) end,
       state, 0,
       case when state in ('ready', 'delayed', 'parked', 'suspended') then 0
            when state = 'dead' and g %% 2 = 0 then 1 else 3 end,
       3,
       case when state in ('ready', 'delayed', 'parked', 'suspended') then 0
            when state = 'dead' and g %% 2 = 0 then 1 else 3 end,
       case when state = 'delayed' then %(now)s::timestamptz + interval '1 hour' else at end,
       at, at,
       case when state in ('running', 'completed', 'dead') then 'bench-worker-' || (g %% 4) end,
       case when state = 'running' then %(now)s::timestamptz when state in ('completed', 'dead') then at end,
       case when state = 'running' then %(now)s::timestamptz + interval '30 seconds' end,
       case when state in ('completed', 'dead') then at + interval '1 second' end,
       case when state = 'dead' then 'X_BENCH_' || (g %% 7) || ': failed [stop: '
            || case when g %% 2 = 0 then 'terminal at attempt 1' else 'attempts-exhausted at attempt 3' end || ' of 3]' end,
       case when state = 'dead' then 'X_BENCH_' || (g %% 7) end,
       case when state = 'dead' then case when g %% 2 = 0 then 'terminal' else 'attempts-exhausted' end end,
       case when state = 'suspended' then jsonb_build_object('kind', 'sleep')
            when state = 'parked' then jsonb_build_object('kind', 'limit', 'key', 'concurrency:job_' || (g %% 50)) end
from (
    select g, %(now)s::timestamptz - g * interval '2 seconds' as at,
           case when g %% 100 >= 98 then 'live' when g %% 100 >= 100 - %(live)s::int then 'ready'
                when g %% 100 < (100 - %(live)s::int) * 95 / 98 then 'completed' else 'dead' end as kind
    from generate_series(%(first)s::int, %(last)s::int) as g
) s,
lateral (select case when kind = 'live' then (array['ready', 'delayed', 'running', 'suspended', 'parked'])[1 + g / 100 %% 5]
                     else kind end as state) st;

-- name: bench_seed_attempts :exec
-- One settled attempt per claim each finished job had (a dead-at-3 job has three).
insert into jobs.attempt (job_id, run, attempt, worker, started_at, finished_at, outcome, error_code, error)
select j.id, r, r, j.claimed_by, j.claimed_at, j.finished_at,
       case when r < j.run then 'retried' when j.state = 'dead' then 'dead' else 'completed' end,
       case when j.state = 'dead' or r < j.run then j.error_code end,
       case when j.state = 'dead' or r < j.run then j.last_error end
from jobs.job j, generate_series(1, j.run) as r
where j.state in ('completed', 'dead') and j.id >= %(lo)s::uuid and j.id < %(hi)s::uuid;

-- name: bench_seed_steps :exec
-- Two durable steps for every tenth finished job (fetch, then send).
insert into jobs.step (job_id, name, seq, kind, status, attempt, run, started_at, finished_at, result, result_size)
select j.id, s.name, s.seq, 'run', 'completed', 1, 1, j.claimed_at, j.finished_at, '{"ok":true}', 11
from jobs.job j, (values ('fetch', 0), ('send', 1)) as s(name, seq)
where j.state in ('completed', 'dead') and j.id >= %(lo)s::uuid and j.id < %(hi)s::uuid
  and get_byte(uuid_send(j.id), 15) %% 10 = 0;

-- name: bench_seed_workers :exec
-- Four live workers over the five queues.
insert into jobs.worker (id, host, pid, queues, concurrency, in_use, started_at, heartbeat_at)
select 'bench-worker-' || w, 'host-' || w, 1000 + w, array['q0','q1','q2','q3','q4'], 16, 4, %(now)s, %(now)s
from generate_series(0, 3) as w
on conflict (id) do nothing;

-- name: bench_settle_seeded :exec
-- The seeded settled rows into the open bucket, where the engine settles them
-- (0012_settled_buckets.sql): the seed statements insert every row into jobs.job; this moves the
-- completed, dead and cancelled ones, set-based, after each batch.
with out as (delete from only jobs.job where state in ('completed','dead','cancelled') returning *)
insert into jobs.job_done_now select * from out;

-- name: bench_seal :exec
-- Seal the open bucket, as the maintenance leader does once it has been open for a quarter of
-- the retention: the seed spreads its settled rows over buckets as a fleet's retention does.
select jobs.job_done_seal(now(), '1min');

-- name: bench_compact_live :exec
-- jobs.job as a fleet running 0010_settled_rows keeps it: its heap and indexes sized for the live
-- rows. The seed inserted every row there and moved the settled ones out, leaving a heap and
-- indexes sized for all of them (28,612 heap pages for 20,000 live rows at 1M jobs), which a table
-- that only ever holds live rows never has. Rewrites jobs.job alone (an inheritance child is
-- not reached).
vacuum full jobs.job;

-- name: bench_vacuum :exec
-- Planner statistics and the visibility map, as autovacuum leaves a live system: every table of
-- the database (each bucket of settled rows is a table of its own, which a vacuum of jobs.job or
-- jobs.job_done does not reach).
vacuum analyze;

-- name: bench_seed_busy_hour :exec
-- %(n)s more completions spread evenly over the hour before %(now)s (360,000: an hour at 100
-- jobs/s), for the queues view's sparkline on a busy queue (queues.busy_hour).
insert into jobs.job (id, name, queue, idempotency_key, input, result, state, attempt, max_attempts, run,
                      run_at, created_at, updated_at, claimed_by, claimed_at, finished_at)
select
       -- include: uuid7_at
       , 'job_' || (g %% 50), 'q' || (g %% 5), 'busy:' || g,
       jsonb_build_object('n', g), jsonb_build_object('ok', true), 'completed', 1, 3, 1,
       at, at, at, 'bench-worker-' || (g %% 4), at, at
from (select g, %(now)s::timestamptz - g * (interval '1 hour' / %(n)s::int) as at
      from generate_series(1, %(n)s::int) as g) s;

-- name: bench_flood_dead :exec
-- A flood of dead letters: every completed row dead (out of attempts, one of the seed's seven
-- codes), as a poison deploy or a downstream outage leaves a fleet: ~95% of the rows dead. The
-- triggers that count dead rows one by one are skipped for the update (jobs.dead_group_moving,
-- which jobs.job_done_drop sets for its move) and the groups counted afresh after it, as
-- 0017_dead_group_counts counts them: what the triggers would have left, without 950,000 trigger
-- calls in one transaction.
select set_config('jobs.dead_group_moving', 'on', false);
update jobs.job_done
set state = 'dead', result = null, error_code = 'X_BENCH_' || mod(get_byte(uuid_send(id), 15), 7),
    stop_reason = 'attempts-exhausted', last_error = 'X_BENCH: failed [stop: attempts-exhausted at attempt 3 of 3]'
where state = 'completed';
select set_config('jobs.dead_group_moving', 'off', false);
delete from jobs.dead_group;
insert into jobs.dead_group
select name, queue, error_code, stop_reason, tenant, count(*), min(finished_at), max(finished_at)
from jobs.job_done where state = 'dead'
group by name, queue, error_code, stop_reason, tenant;
