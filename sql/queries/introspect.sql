-- The introspection read models: queues, the jobs list, dead letters, limits, pause state.
-- Each runs inside a transaction whose statement_timeout is the caller's budget (budget_set),
-- with custom plans forced, so a filter's `%(x)s is null or ...` arms fold away and every
-- filtered list reads an index. The job filter is one fragment, job_filter, that each statement
-- reading it includes (`-- include: job_filter`, engine/drivers/sqlfiles.py).

-- fragment: group_filter
-- The job filter's conditions on the columns of a dead-letter group (queue, name, tenant, error
-- code, stop reason): job_filter's, and dead_groups_counted's over the counts kept per group. A
-- code or stop reason given is equalled; %(no_code)s and %(no_stop)s (the filter's NULL) ask for
-- a null one instead, so a group without a code is that group, never every code. `is null` (not
-- `is not distinct from`) keeps each an index condition.
and (%(queue)s::text is null or queue = %(queue)s::text)
and (%(name)s::text is null or name = %(name)s::text)
and (%(tenant)s::text is null or tenant = %(tenant)s::text)
and (%(code)s::text is null or error_code = %(code)s::text)
and (not %(no_code)s::boolean or error_code is null)
and (%(stop)s::text is null or stop_reason = %(stop)s::text)
and (not %(no_stop)s::boolean or stop_reason is null)

-- fragment: job_filter
-- The job filter (engine/drivers/postgres/introspect.py filter_params): a condition per field,
-- each left out when its parameter is null (or false). Appended to a WHERE clause, so each line
-- starts with `and`; actions.sql's bulk statements include it too.
-- include: group_filter
and (%(state)s::text is null or state = %(state)s::text)
and (%(input)s::jsonb is null or input @> %(input)s::jsonb)
and (%(key_like)s::text is null or idempotency_key like %(key_like)s::text)
and (%(id_lo)s::uuid is null or id between %(id_lo)s::uuid and %(id_hi)s::uuid)
and (%(since)s::timestamptz is null or created_at >= %(since)s::timestamptz)
and (%(until)s::timestamptz is null or created_at < %(until)s::timestamptz)

-- name: budget_set :one
-- Bound every later statement of this transaction to the caller's budget, with custom plans.
select set_config('statement_timeout', %(ms)s::text, true) as timeout,
       set_config('plan_cache_mode', 'force_custom_plan', true) as plans;

-- name: queue_names :many
-- Every queue with a row that is not running: a skip scan (one probe per queue) over the list
-- index that holds every row but the running ones, plus paused queues. The queues of running rows
-- come from queue_running, so the running rows are read once.
with recursive q as (
    (select queue from jobs.job where state <> 'running' order by queue limit 1)
    union all
    select (select j.queue from jobs.job j where j.state <> 'running' and j.queue > q.queue
            order by j.queue limit 1)
    from q where q.queue is not null
)
select queue as name from q where queue is not null
union
select name from jobs.queue
order by 1;

-- name: queue_running :many
-- Running rows per queue, in one pass over job_running (bounded by the fleet's slots).
select queue as name, count(*)::int as n
from jobs.job
where state = 'running'
group by queue;

-- name: queue_counts :many
-- Rows per (queue, state), each count stopping at %(cap)s + 1. Each state is spelled as a constant
-- so the planner can match its partial index (waiting, suspended, finished lists); a state taken
-- from an unnest matched none of them and counted by a sequential scan (6 s at 1M rows). Running
-- rows are queue_running's. Dead letters are summed from their counts per group (dead_counted):
-- exact, however many.
select n.name, c.state, c.n
from unnest(%(queues)s::text[]) as n(name)
cross join lateral (values
    ('ready', (select count(*) from (select 1 from jobs.job j where j.queue = n.name and j.state = 'ready'
                                limit %(cap)s + 1) x)::int),
    ('delayed', (select count(*) from (select 1 from jobs.job j where j.queue = n.name and j.state = 'delayed'
                                limit %(cap)s + 1) x)::int),
    ('suspended', (select count(*) from (select 1 from jobs.job j where j.queue = n.name and j.state = 'suspended'
                                limit %(cap)s + 1) x)::int),
    ('parked', (select count(*) from (select 1 from jobs.job j where j.queue = n.name and j.state = 'parked'
                                limit %(cap)s + 1) x)::int),
    ('dead', (select coalesce(sum(c.n), 0) from (
                  -- include: dead_counted
              ) c where c.queue = n.name)::int)
) as c(state, n);

-- name: queue_count_estimate :one
-- The planner's estimate of one queue's rows in one state, asked only for a count that passed its
-- cap: from the (queue, state) statistics (0001_initial.sql: job_queue_state_mcv), as fresh as the last
-- analyze. Planning only: nothing is read.
explain (format json) select 1 from jobs.job where queue = %(queue)s and state = %(state)s;

-- name: queue_oldest_ready :many
-- Per queue, when its longest-waiting row became claimable: ready, parked (a shed job waits, I8)
-- and delayed rows already due, as the gauges measure it. A ready or due delayed row became
-- claimable at its run_at: a job delayed an hour, or retried after a backoff, has not waited that
-- hour, and a released one keeps its place and its age. A parked one since it first fell due,
-- however often a limit shed it since (waiting_since; updated_at, its last shed, for a row parked
-- before that column): its run_at is when it may be tried again.
-- The earliest run_at is read from job_claim (queue, priority desc, run_at, id) one priority at a
-- time, each priority found by a loose scan (one probe each): the first ready or due delayed row
-- of each is its earliest, so a backlog costs a probe per priority, not a read of every waiting
-- row (75 ms a refresh over 500,000 ready rows in five queues). The walk stops at %(now)s, as the
-- claim does (a ready row is due: its run_at is when it became ready), so rows not yet due (jobs
-- scheduled ahead, sleeps) are never stepped over; due parked and suspended rows ahead of the
-- first ready one are. Parked rows' own age is read one by one: it is in no index's order, and
-- there are as many as limits hold back.
select n.name,
       least(
           (select min(d.run_at)
            from (with recursive p as (
                      (select j.priority from jobs.job j
                       where j.queue = n.name and j.state in ('ready','delayed','parked','suspended')
                       order by j.priority desc limit 1)
                      union all
                      select (select j.priority from jobs.job j
                              where j.queue = n.name and j.state in ('ready','delayed','parked','suspended')
                                and j.priority < p.priority
                              order by j.priority desc limit 1)
                      from p where p.priority is not null
                  )
                  select (select j.run_at from jobs.job j
                          where j.queue = n.name and j.state in ('ready','delayed','parked','suspended')
                            and j.priority = p.priority and j.run_at <= %(now)s
                            and j.state in ('ready','delayed')
                          order by j.run_at limit 1) as run_at
                  from p where p.priority is not null) d),
           (select min(coalesce(j.waiting_since, j.updated_at)) from jobs.job j
            where j.queue = n.name and j.state = 'parked')
       ) as oldest
from unnest(%(queues)s::text[]) as n(name);

-- name: queue_throughput :many
-- Completions per queue per calendar minute, the 60 minutes up to %(now)s's (minute 0: the one now
-- under way). Minutes the maintenance leader has rolled up (before throughput_rolled_until) come
-- from jobs.throughput_minute; only the rows after it are counted, in one pass over job_finished_at.
with w as (
    select date_trunc('minute', %(now)s) as this_minute,
           date_trunc('minute', %(now)s) - interval '59 minutes' as lo,
           coalesce((select value::timestamptz from jobs.meta where key = 'throughput_rolled_until'), '-infinity') as rolled
)
select name, (extract(epoch from (w.this_minute - m.minute)) / 60)::int as minute, n
from w, (
    select t.queue as name, t.minute, t.completed as n
    from jobs.throughput_minute t, w
    where t.minute >= w.lo and t.minute < w.rolled and t.minute <= w.this_minute
      and t.queue = any(%(queues)s::text[])
    union all
    select j.queue, date_trunc('minute', j.finished_at), count(*)::int
    from jobs.job j, w
    where j.state = 'completed'
      and j.finished_at >= greatest(w.lo, w.rolled) and j.finished_at <= %(now)s
      and j.queue = any(%(queues)s::text[])
    group by 1, 2
) m;

-- name: queue_series :many
-- One queue's figures per calendar minute, the 60 up to %(now)s's (minute 0: the one under way): its
-- completions, its jobs gone dead, its completions' wait (due to claimed) and run (claimed to done)
-- percentiles in ms. As queue_throughput: rolled minutes from jobs.throughput_minute, the rows
-- after the watermark counted (a minute or two: the rollup keeps the read flat at any rate). Those
-- rows are found by finished_at first (job_finished_at, as queue_throughput) and only then by
-- queue: with the queue in the same WHERE the planner walked job_list_queue_state through every
-- completed row of the queue (355 ms after a busy hour, python -m bench.projections).
with w as (
    select date_trunc('minute', %(now)s) as this_minute,
           date_trunc('minute', %(now)s) - interval '59 minutes' as lo,
           coalesce((select value::timestamptz from jobs.meta where key = 'throughput_rolled_until'), '-infinity') as rolled
), recent as materialized (
    select j.queue, j.state, j.finished_at, j.claimed_at, j.run_at
    from jobs.job j, w
    where j.state in ('completed', 'dead')
      and j.finished_at >= greatest(w.lo, w.rolled) and j.finished_at <= %(now)s
)
select (extract(epoch from (w.this_minute - m.minute)) / 60)::int as minute,
       m.completed, m.dead, m.wait_p50_ms, m.wait_p95_ms, m.run_p50_ms
from w, (
    select t.minute, t.completed, t.dead, t.wait_p50_ms, t.wait_p95_ms, t.run_p50_ms
    from jobs.throughput_minute t, w
    where t.queue = %(queue)s and t.minute >= w.lo and t.minute < w.rolled and t.minute <= w.this_minute
    union all
    select date_trunc('minute', j.finished_at),
           (count(*) filter (where j.state = 'completed'))::int,
           (count(*) filter (where j.state = 'dead'))::int,
           percentile_disc(0.5) within group (order by (extract(epoch from j.claimed_at - j.run_at) * 1000)::int)
               filter (where j.state = 'completed'),
           percentile_disc(0.95) within group (order by (extract(epoch from j.claimed_at - j.run_at) * 1000)::int)
               filter (where j.state = 'completed'),
           percentile_disc(0.5) within group (order by (extract(epoch from j.finished_at - j.claimed_at) * 1000)::int)
               filter (where j.state = 'completed')
    from recent j
    where j.queue = %(queue)s
    group by 1
) m;

-- name: queue_pauses :many
-- The durable pause state of every queue that has a row.
select name, paused, paused_by, paused_at, note from jobs.queue order by name;

-- name: queue_get :one
-- One queue's pause state.
select name, paused, paused_by, paused_at, note from jobs.queue where name = %(queue)s;

-- fragment: page_row
-- The jobs list's row (engine/drivers/postgres/introspect.py summary_row), in each of job_page's arms.
id, name, queue, tenant, state, idempotency_key, priority, attempt, max_attempts, run_at,
created_at, updated_at, finished_at, error_code, stop_reason

-- name: job_page :many
-- One page of the filtered list, newest first, keyset on id (below %(cursor)s): an ordered merge
-- of four arms, each its own index walk newest first that stops at the page size: the live rows
-- that are not running (jobs.job's list indexes: job_live_queue_state, the dedupe index for name,
-- tenant and key prefix, whose tenant is coalesce(tenant, ''), the GIN), the running ones (few:
-- the fleet's slots, from job_running), the settled ones (jobs.job_done, 0010_settled_rows.sql)
-- and the settled rows still in jobs.job (a worker of a release before 0010 settles in place
-- until the maintenance leader moves the row: job_finished_at, empty otherwise). Each arm is
-- planned for its own table: read through jobs.job as one Append, a filter that matched no live
-- row (a dead-state page) walked the whole live table by id to find none. An arm the state
-- filter rules out folds away at plan time (custom plans).
select * from (
    (select
           -- include: page_row
     from only jobs.job
     where state in ('ready','delayed','suspended','parked')
       and (%(state)s::text is null or %(state)s::text in ('ready','delayed','suspended','parked'))
       and (%(cursor)s::uuid is null or id < %(cursor)s::uuid)
       and (%(tenant)s::text is null or coalesce(tenant, '') = %(tenant)s::text)
      -- include: job_filter
     order by id desc
     limit %(limit)s)
    union all
    (select
           -- include: page_row
     from only jobs.job
     where state in ('completed','dead','cancelled')
       and (%(state)s::text is null or %(state)s::text in ('completed','dead','cancelled'))
       and (%(cursor)s::uuid is null or id < %(cursor)s::uuid)
      -- include: job_filter
     order by id desc
     limit %(limit)s)
    union all
    (select
           -- include: page_row
     from only jobs.job
     where state = 'running' and (%(state)s::text is null or %(state)s::text = 'running')
       and (%(cursor)s::uuid is null or id < %(cursor)s::uuid)
      -- include: job_filter
     order by id desc
     limit %(limit)s)
    union all
    (select
           -- include: page_row
     from jobs.job_done
     where (%(state)s::text is null or %(state)s::text in ('completed','dead','cancelled'))
       and (%(cursor)s::uuid is null or id < %(cursor)s::uuid)
      -- include: job_filter
     order by id desc
     limit %(limit)s)
) page
order by id desc
limit %(limit)s;

-- name: job_page_count :one
-- How many rows the filter matches, counting no further than %(cap)s + 1: each of job_page's arms
-- is an index walk that stops at the cap, never a seq scan, and the arms run one after the other
-- under one limit, so the count stops as soon as the cap is reached in any of them.
select count(*)::int as n from (
    (select 1 from only jobs.job
     where state in ('ready','delayed','suspended','parked')
       and (%(state)s::text is null or %(state)s::text in ('ready','delayed','suspended','parked'))
       and (%(tenant)s::text is null or coalesce(tenant, '') = %(tenant)s::text)
      -- include: job_filter
     order by id desc
     limit %(cap)s + 1)
    union all
    (select 1 from only jobs.job
     where state in ('completed','dead','cancelled')
       and (%(state)s::text is null or %(state)s::text in ('completed','dead','cancelled'))
      -- include: job_filter
     order by id desc
     limit %(cap)s + 1)
    union all
    (select 1 from only jobs.job
     where state = 'running' and (%(state)s::text is null or %(state)s::text = 'running')
      -- include: job_filter
     order by id desc
     limit %(cap)s + 1)
    union all
    (select 1 from jobs.job_done
     where (%(state)s::text is null or %(state)s::text in ('completed','dead','cancelled'))
      -- include: job_filter
     order by id desc
     limit %(cap)s + 1)
    limit %(cap)s + 1
) matched;

-- fragment: dead_counted
-- The dead rows per (name, queue, error code, stop reason, tenant), counted: jobs.dead_group's
-- counts (0017_dead_group_counts.sql) and the dead rows an older release settled in place in
-- jobs.job, which no trigger counts (job_finished_at; none once they have moved), a row each.
select name, queue, error_code, stop_reason, tenant, n, first_seen, last_seen from jobs.dead_group
union all
select name, queue, error_code, stop_reason, tenant, 1, finished_at, finished_at
from only jobs.job where state = 'dead'

-- fragment: dead_groups_of
-- Dead letters grouped by (name, error code, stop reason) from `t` (one row per tenant of each:
-- count, first and last seen), its tenants counted as the dedupe namespace counts them (no tenant
-- and '' are one); the most recent one (id, last error, attempt n of m) by one probe each of
-- job_finished_at at the group's last_seen, and its fix by one probe of attempt_pkey (engine.projections.latest_fix: the latest
-- attempt that failed with an error). Follows a `with t as (...),`.
g as (
    select name, error_code, stop_reason, sum(n)::int as n, min(first_seen) as first_seen,
           max(last_seen) as last_seen, count(distinct coalesce(tenant, ''))::int as tenants
    from t
    group by 1, 2, 3
)
select g.name, g.error_code, g.stop_reason, g.n, g.first_seen, g.last_seen, g.tenants,
       l.id as last_job_id, l.last_error, l.attempt, l.max_attempts,
       (select a.fix from jobs.attempt a where a.job_id = l.id and a.error is not null
        order by a.run desc limit 1) as last_fix
from g
cross join lateral (
    select id, last_error, attempt, max_attempts
    from jobs.job
    where state = 'dead' and finished_at = g.last_seen and name = g.name
      and error_code is not distinct from g.error_code and stop_reason is not distinct from g.stop_reason
          -- include: job_filter
    order by id desc
    limit 1
) l
order by g.last_seen desc, g.name, coalesce(g.error_code, ''), coalesce(g.stop_reason, '');

-- name: dead_groups :many
-- Dead letters under any filter: an index-only scan of every dead row the filter matches
-- (job_dead_v5 and each bucket's dead index), grouped per tenant first (a hash aggregate:
-- count(distinct tenant) sorted every group). It reads every dead row, so it grows with them;
-- dead_groups_counted answers the filters it can without reading them.
with t as (
    select name, error_code, stop_reason, tenant,
           count(*)::int as n, min(finished_at) as first_seen, max(finished_at) as last_seen
    from jobs.job
    where state = 'dead'
      -- include: job_filter
    group by 1, 2, 3, 4
),
-- include: dead_groups_of

-- name: dead_groups_counted :many
-- Dead letters under a filter of a group's columns only (group_filter: queue, name, tenant, error
-- code, stop reason), from the dead rows counted per group (dead_counted): as many rows as groups,
-- however many dead letters there are.
with t as (
    select name, error_code, stop_reason, tenant,
           sum(n)::int as n, min(first_seen) as first_seen, max(last_seen) as last_seen
    from (
        -- include: dead_counted
    ) c
    where true
      -- include: group_filter
    group by 1, 2, 3, 4
),
-- include: dead_groups_of


-- name: job_duplicate :one
-- Another live row holding this job's dedupe key (name, tenant or '', key), the I2 namespace.
select l.id, l.name, l.queue, l.tenant, l.state, l.idempotency_key, l.priority, l.attempt,
       l.max_attempts, l.run_at, l.created_at, l.updated_at, l.finished_at, l.error_code, l.stop_reason
from jobs.job j
join jobs.job l on l.name = j.name and coalesce(l.tenant, '') = coalesce(j.tenant, '')
               and l.idempotency_key = j.idempotency_key
               and l.state in ('ready','delayed','running','suspended','parked')
where j.id = %(id)s and l.id <> j.id
limit 1;

-- name: limit_slots :many
-- The slot rows of these concurrency keys (who holds each, until when), with the holder job's
-- state and, while it runs, when its claim began (a running holder renews its slot's lease).
select s.key, s.slot, s.job_id, s.worker, s.lease_until, j.state as job_state,
       case when j.state = 'running' then j.claimed_at end as started_at
from jobs.slot s
left join jobs.job j on j.id = s.job_id
where s.key = any(%(keys)s::text[]) order by s.key, s.slot;

-- name: queue_waits :many
-- One queue's jobs that are not claimable now, grouped by what they wait for: delayed ones still
-- in the future, suspended ones by sleep or by event name, parked ones by the limit and key that
-- shed them (or 'unknown': parked for a worker whose release declares the job); with the
-- earliest run_at of each group (over the job_due index).
select state,
       case when state = 'delayed' then 'delay'
            when state = 'parked' then coalesce(wait->>'limit', wait->>'kind', 'limit')
            else coalesce(wait->>'kind', 'sleep') end as kind,
       case when state = 'parked' then wait->>'key'
            when wait->>'kind' = 'event' then wait->>'event' end as key,
       count(*)::int as n, min(run_at) as next_at
from jobs.job
where queue = %(queue)s and state in ('delayed','parked','suspended')
  and (state <> 'delayed' or run_at > %(now)s)
group by 1, 2, 3
order by 4 desc, 1, 2, 3
limit 20;

-- name: limit_buckets :many
-- The token buckets of these rate-limit keys.
select key, tokens, refilled_at from jobs.rate_bucket where key = any(%(keys)s::text[]);

-- name: role_may_act :one
-- Whether this session may act on jobs: the database takes writes (not a hot standby) and the role
-- holds what an operator's action writes (a job's row, its history, a queue's pause). The console
-- offers no action the database would refuse.
select pg_is_in_recovery() as standby, current_user as role,
       has_table_privilege('jobs.job', 'UPDATE') and has_table_privilege('jobs.history', 'INSERT')
       and has_table_privilege('jobs.queue', 'INSERT') as writer;
