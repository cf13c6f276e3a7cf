-- The worker's statements: its registration row, wake-ups, and when the next job falls due.
-- Every time-comparing statement takes %(now)s.

-- name: worker_register :exec
-- Register (or re-register after a restart under the same id, or after the reaper removed the
-- row of a live worker) one worker process, with what it knows of itself: when it started, how
-- often it beats (the workers view's staleness), whether it drains already and the operator's
-- drain request it had seen (none: a restart's new process starts with none).
insert into jobs.worker (id, host, pid, queues, concurrency, in_use, started_at, heartbeat_at, stopping,
                         heartbeat_interval, drain_requested_by, drain_requested_at)
values (%(id)s, %(host)s, %(pid)s, %(queues)s::text[], %(concurrency)s, 0, %(started_at)s, %(now)s, %(stopping)s,
        %(heartbeat_interval)s, %(drain_requested_by)s, %(drain_requested_at)s)
on conflict (id) do update
set host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, in_use = 0, started_at = excluded.started_at,
    heartbeat_at = excluded.heartbeat_at, stopping = excluded.stopping,
    heartbeat_interval = excluded.heartbeat_interval,
    drain_requested_by = excluded.drain_requested_by, drain_requested_at = excluded.drain_requested_at,
    drain_note = null;

-- name: worker_heartbeat :one
-- Stamp a worker's heartbeat and slots in use; no row when the worker was reaped meanwhile. The
-- answer carries an operator's drain request (actions.sql: worker_drain_request).
update jobs.worker
set in_use = %(in_use)s, heartbeat_at = %(now)s, stopping = %(stopping)s
where id = %(id)s
returning id, drain_requested_by, drain_requested_at;

-- name: worker_deregister :exec
-- Remove a worker's row at the end of its drain.
delete from jobs.worker where id = %(id)s;

-- name: worker_list :many
-- Every registered worker with its heartbeat age at %(now)s, by id; heartbeat_interval is null
-- for a worker of a release before 0021.
select id, host, pid, queues, concurrency, in_use, started_at, heartbeat_at, stopping,
       greatest(0, extract(epoch from (%(now)s - heartbeat_at)))::float8 as heartbeat_age,
       drain_requested_by, drain_requested_at, heartbeat_interval
from jobs.worker
order by id;

-- name: queue_listen :exec
-- Subscribe the wake-up connection to new work (job_enqueue and queue_notify send on it).
listen jobs_enqueue;

-- name: queue_notify :exec
-- Wake idle workers of these queues at once (a drain's released jobs, a parked row freed).
select pg_notify('jobs_enqueue', q) from unnest(%(queues)s::text[]) as t(q);

-- name: queue_gauges :many
-- Per queue: depth (ready + parked + due delayed, I8), since when its oldest row waits, dead
-- letters. Counted at most once per max_age by the whole fleet, not once per worker: the count
-- reads every waiting and dead row, and every worker asks each gauges_interval. The caller that
-- finds jobs.gauge_snapshot older than max_age locks it (skip locked: a caller that finds another
-- counting takes the last snapshot rather than wait or count twice), counts and stores; the
-- others read the snapshot. `exists (select 1 from due)` is a one-time filter: a fresh snapshot
-- never starts the scans of jobs.job. The waiting arm reads job_live_queue_state (queue, state, id;
-- run_at, updated_at, waiting_since included), index-only; the dead arm the dead rows counted per
-- group (dead_counted), as many rows as groups however many dead letters there are.
with due as (
    select id from jobs.gauge_snapshot
    where id = 1 and taken_at <= %(now)s - make_interval(secs => %(max_age)s)
    for update skip locked
), counted as (
    select queue, sum(depth)::int as depth, min(since) as since, sum(dead)::int as dead
    from (
        select queue, count(*) as depth,
               min(case when state = 'parked' then coalesce(waiting_since, updated_at) else run_at end) as since, 0 as dead
        from jobs.job
        where state in ('ready','parked','delayed') and (state <> 'delayed' or run_at <= %(now)s)
          and exists (select 1 from due)
        group by queue
        union all
        select queue, 0, null, sum(n)
        from (
            -- include: dead_counted
        ) c
        where exists (select 1 from due)
        group by queue
    ) arms
    group by queue
), stored as (
    update jobs.gauge_snapshot s
    set taken_at = %(now)s,
        gauges = coalesce((select jsonb_agg(jsonb_build_array(queue, depth, since, dead) order by queue) from counted), '[]')
    from due
    where s.id = due.id
    returning s.gauges
)
select g->>0 as queue, (g->>1)::int as depth, (g->>2)::timestamptz as since, (g->>3)::int as dead
from jsonb_array_elements(coalesce((select gauges from stored),
                                   (select gauges from jobs.gauge_snapshot where id = 1), '[]')) as g;

-- name: worker_claim :many generic
-- The one claim (the worker's, and every test's and seeder's): lock due rows (SKIP LOCKED), stamp
-- the claimant, burn an attempt, in one statement, planned per queue through a lateral so the
-- job_claim index hands rows over in order (an `= any(array)` over queues made the planner read and
-- sort every ready row of every queue: 27 ms a claim at 20,000 ready), and updated by ctid array
-- (below) so the planner never hashes the whole table. The fields the claim did not set come back, by
-- position, the id as text (rows.CLAIM_FIELDS; decoding `j.*` into dicts and mapping them by
-- name was ~15 percent of a draining worker's CPU); the ones it set or cleared the driver knows.
-- One more row, its id null, says when these queues next have work this claim did not take (its
-- run_at): the first ready row in claim order, else the earliest delayed, parked or suspended
-- row, of unpaused queues, leaving out the rows just taken. An idle worker sleeps until then (or
-- a NOTIFY): asked in the claim's own round trip, and only when the claim came back short.
-- %(floors)s, one per queue (null: none), is where the worker's claim starts reading that queue:
-- rows due at or after it (engine/runtime/floors.py says why); the next-due row is looked for
-- from there too. Its plan is one ordered walk of job_claim per queue whatever the parameters,
-- and planning it costs ~4x running it (a cached plan: ~450 us a claim of 16; planned each call:
-- ~2,100 us), hence `generic`.
-- The update finds the rows it locked by their ctid (a TID scan) rather than by id (a probe of
-- the primary key per row, 3.5-6 us a row more of backend CPU). A locked
-- row cannot move. One whose version changed after this statement's snapshot and before its
-- lock (it stayed claimable: an event woke it) is locked at its new version, which the update
-- cannot see: that row is not claimed here. So the claim counts and leaves out what it updated,
-- not what it locked, and such a row comes back as due now (the worker claims again within 10 ms).
with picked as (
    select c.ctid
    from unnest(%(queues)s::text[], %(floors)s::timestamptz[]) as q(name, floor)
    cross join lateral (
        select id, ctid, priority, run_at from jobs.job
        where queue = q.name
          and state in ('ready','delayed','parked','suspended')
          and run_at <= %(now)s and run_at >= coalesce(q.floor, '-infinity')
        order by priority desc, run_at, id
        limit %(limit)s
        for update skip locked
    ) c
    where q.name <> all (array(select name from jobs.queue where paused))
    order by c.priority desc, c.run_at, c.id
    limit %(limit)s
), upd as (
    -- only: a live row is in jobs.job itself; jobs.job_done (its child) is not probed per id.
    update only jobs.job j
    set state = 'running', run = j.run + 1, attempt = j.attempt + 1,
        claimed_by = %(worker)s, claimed_at = %(now)s,
        lease_until = %(now)s + %(lease_seconds)s * interval '1 second', updated_at = %(now)s,
        finished_at = null, result = null, stop_reason = null
    where j.ctid = any(array(select ctid from picked))
    returning j.id::text, j.name, j.queue, j.tenant, j.idempotency_key, j.input, j.priority, j.attempt,
              j.max_attempts, j.run, j.run_at, j.created_at, j.last_error, j.error_code, j.wait, j.waiting_since,
              j.trace
)
select * from upd
union all
select null, null, null, null, null, null, null, null, null, null, min(t.run_at), null, null, null, null, null, null
from unnest(%(queues)s::text[], %(floors)s::timestamptz[]) as q(name, floor)
cross join lateral (
    (select run_at from jobs.job
     where queue = q.name and state = 'ready' and id <> all (array(select id::uuid from upd))
       and run_at >= coalesce(q.floor, '-infinity')
     order by priority desc, run_at, id
     limit 1)
    union all
    (select min(run_at) from jobs.job
     where queue = q.name and state in ('delayed','parked','suspended')
       and id <> all (array(select id::uuid from upd)))
) as t(run_at)
where q.name <> all (array(select name from jobs.queue where paused))
  and (select count(*) from upd) < %(limit)s;

-- name: session_settings :one
-- What every engine session runs as it opens, whatever the database or the role sets as its
-- defaults: read committed (the claims and upserts are written for it: under repeatable read or
-- serializable they fail on rows another worker changed), ISO dates and postgres-style intervals
-- (the only text forms psycopg reads: under a DateStyle of 'SQL, DMY' every read raised), and
-- times read in UTC, the engine's clock's zone (what the CLI and the console label them).
select set_config('default_transaction_isolation', 'read committed', false) as isolation,
       set_config('datestyle', 'ISO', false) as dates,
       set_config('intervalstyle', 'postgres', false) as intervals,
       set_config('timezone', 'UTC', false) as zone;

-- name: plan_generic :one
-- The rest of this transaction runs every prepared statement's generic plan: sent before a
-- statement headed `generic` (engine/drivers/sqlfiles.py), in the same round trip.
select set_config('plan_cache_mode', 'force_generic_plan', true) as plans;

-- name: worker_presence_lock :one
-- Take a worker's presence lock on its own session: session-level, so PostgreSQL frees it the
-- moment that session ends (a killed process's included). held is false when another session
-- holds that key: the caller picks another.
select pg_try_advisory_lock(%(namespace)s, %(key)s) as held;

-- name: worker_presence_record :exec
-- Where a worker's presence lock is, and in which lifetime of the server it was taken (no clock:
-- the server's own start time, compared with itself by job_rescue_orphaned).
update jobs.worker
set presence_key = %(key)s, presence_epoch = pg_postmaster_start_time()
where id = %(id)s;

-- name: worker_presence_check :one
-- The presence session still answers (a session the server ended raises instead).
select true as alive;

-- name: worker_presence_unlock :exec
-- Free a worker's presence lock now, before its session closes (the server ends a closed
-- session a moment later, not before the close returns).
select pg_advisory_unlock_all();
