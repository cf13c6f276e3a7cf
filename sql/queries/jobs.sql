-- The core queue's statements: enqueue, claim, settle, renew, cancel, read one job.
-- Every time-comparing statement takes %(now)s: time is a parameter (the engine's clock).
-- Every mutation of a claimed row is fenced on the claimant: claimed_by + run (I15).

-- fragment: job_columns
-- jobs.job's columns in table order: the insert that moves a row between jobs.job and
-- jobs.job_done (0010_settled_rows.sql) names every one.
(id, name, queue, tenant, idempotency_key, input, result, state, priority, attempt, max_attempts, run,
 run_at, created_at, updated_at, claimed_by, claimed_at, lease_until, finished_at, last_error,
 error_code, stop_reason, wait, waiting_since, trace)

-- name: schema_version :one
-- The installed schema version; fails with undefined_table when nothing is installed.
select value from jobs.meta where key = 'schema_version';

-- name: job_enqueue :many
-- Insert a batch in one round trip. The batch is one jsonb array of rows, [id, name, queue,
-- tenant, key, input, max_attempts, run_at, priority] each, a tenth, created_at, when the job
-- has its own (a staged job exists from its stage; else null or absent), and an eleventh, the
-- trace context (0016_trace_context.sql), when the job has one: one parameter parsed once (nine
-- binary arrays cost twice as much end to end, most of it in dumping them element by element).
-- Answers only the rows NOT inserted, each with the live row holding its dedupe key (none: it
-- committed after this statement's snapshot, and the driver looks again); every other row was
-- inserted as given. The conflict target spells the unique index expression exactly (I2).
with input as (
    select (e->>0)::uuid as id, e->>1 as name, e->>2 as queue, e->>3 as tenant, e->>4 as key,
           e->5 as input, (e->>6)::int as max_attempts, (e->>7)::timestamptz as run_at,
           (e->>8)::int as priority, coalesce((e->>9)::timestamptz, %(now)s) as created_at, e->10 as trace, ord
    from jsonb_array_elements(%(rows)s::jsonb) with ordinality as t(e, ord)
), ins as (
    insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, priority,
                          max_attempts, run_at, created_at, updated_at, trace)
    select id, name, queue, tenant, key, input,
           case when run_at > %(now)s then 'delayed' else 'ready' end,
           priority, max_attempts, run_at, created_at, %(now)s, trace
    from input
    on conflict (name, (coalesce(tenant, '')), idempotency_key)
        where state in ('ready','delayed','running','suspended','parked')
        do nothing
    returning id, queue
)
select i.ord, live.id, live.state
from input i
left join lateral (
    select j.id, j.state from jobs.job j
    where j.name = i.name and coalesce(j.tenant, '') = coalesce(i.tenant, '')
      and j.idempotency_key = i.key
      and j.state in ('ready','delayed','running','suspended','parked')
    limit 1
) live on true
where not exists (select 1 from ins where ins.id = i.id)
union all
-- Wakes idle workers listening on jobs_enqueue: once per queue of the batch, not once per row
-- (an Append runs this arm whatever the first answers; its one row has ord 0).
select 0, null, null
from (select count(*) from (select pg_notify('jobs_enqueue', q) from (select distinct queue from ins) as d(q)) n) w;

-- name: job_enqueue_fresh :one
-- job_enqueue for a batch expected to replay no live key: a plain INSERT, no ON CONFLICT. The
-- dedupe index (I2) still refuses a live key, by raising unique_violation on job_dedupe_live_v3:
-- the statement then inserts nothing and the driver sends the batch again through job_enqueue.
-- ON CONFLICT probes the index before each insert and confirms each speculative insertion: ~10 us
-- a row of backend CPU, a third of this statement's (python -m bench.indexcost).
with ins as (
    insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, priority,
                          max_attempts, run_at, created_at, updated_at, trace)
    select (e->>0)::uuid, e->>1, e->>2, e->>3, e->>4, e->5,
           case when (e->>7)::timestamptz > %(now)s then 'delayed' else 'ready' end,
           (e->>8)::int, (e->>6)::int, (e->>7)::timestamptz, coalesce((e->>9)::timestamptz, %(now)s), %(now)s, e->10
    from jsonb_array_elements(%(rows)s::jsonb) as t(e)
    returning queue
)
-- Wakes idle workers listening on jobs_enqueue: once per queue of the batch.
select count(*) as woke from (select pg_notify('jobs_enqueue', q) from (select distinct queue from ins) as d(q)) n;

-- name: job_enqueue_one :one
-- Insert one job: the single enqueue's statement (no unnest, no join: ~4x job_enqueue's rate).
-- A job with a trace context goes through job_enqueue_fresh instead (this one names no trace).
-- No row back means a live row holds the dedupe key: the driver then reads it (job_find_live).
-- A null run_at (due now) or created_at (no stage time of its own) is %(now)s: the usual job
-- sends one timestamp, not the same one three times (~1.5 us of client CPU each to dump).
insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, priority,
                      max_attempts, run_at, created_at, updated_at)
values (%(id)s, %(name)s, %(queue)s, %(tenant)s, %(key)s, %(input)s::jsonb,
        case when %(run_at)s::timestamptz > %(now)s then 'delayed' else 'ready' end,
        %(priority)s, %(max_attempts)s, coalesce(%(run_at)s::timestamptz, %(now)s),
        coalesce(%(created_at)s::timestamptz, %(now)s), %(now)s)
on conflict (name, (coalesce(tenant, '')), idempotency_key)
    where state in ('ready','delayed','running','suspended','parked')
    do nothing
returning id, false as deduped, state, pg_notify('jobs_enqueue', queue) as woke;

-- name: job_find_live :one
-- The live row holding a dedupe key: the same namespace as the unique index (I2).
select id, state from jobs.job
where name = %(name)s and coalesce(tenant, '') = coalesce(%(tenant)s::text, '')
  and idempotency_key = %(key)s
  and state in ('ready','delayed','running','suspended','parked')
limit 1;

-- name: job_ack_many :many
-- Complete a batch of claims, fenced per row: each row leaves jobs.job and enters jobs.job_done
-- (0010_settled_rows.sql), so the ack writes the settled rows' list indexes and none of the live
-- table's. A completed attempt is recorded on the row itself (claimed_by, claimed_at,
-- finished_at, run, attempt: job_attempts reads it back), so the ack writes no attempt row:
-- failed, lost, parked and suspended attempts each get one (job_nack, job_rescue), and a completed
-- row that leaves 'completed' writes its own first (job_reset_from_step).
-- No join to an unnest of the batch: with the running rows' statistics stale (they always are in
-- a busy queue), the planner nested-looped the unnest inside the running-row scan and rescanned
-- it per row (10 ms for 200 acks). Each row finds its own run and result in %(fence)s instead, a
-- jsonb object keyed by the job ids as the database writes them ({"<id>": [run, result]}): a
-- lookup in a jsonb object is a binary search over its sorted keys, where the id's position in
-- the id array (array_position, three a row) was a scan of half the batch each. The only plan is
-- one probe of job_running per id. One claimant a statement (%(worker)s): the driver sends one
-- statement per claimant in the batch (one, from a worker's ack buffer).
with gone as (
    delete from only jobs.job j
    where j.id = any(%(ids)s::uuid[]) and j.state = 'running' and j.claimed_by = %(worker)s
      and j.run = (%(fence)s::jsonb -> (j.id::text) ->> 0)::int
    returning j.*
)
insert into jobs.job_done_now
    -- include: job_columns
select id, name, queue, tenant, idempotency_key, input,
       %(fence)s::jsonb -> (id::text) -> 1, 'completed', priority,
       attempt, max_attempts, run, run_at, created_at, %(now)s, claimed_by, claimed_at, null, %(now)s,
       last_error, error_code, stop_reason, null, null, trace
from gone
returning id::text;

-- name: job_nack :one
-- Hand one claim back (retry, dead, park, suspend, release), fenced, recording the attempt.
-- A shed, a suspension and a release burn no attempt (I7, I8); only retry and dead write an error.
-- A claim that resumed a suspended run continues its attempt: one run is one attempt row, so
-- when the job's latest attempt row is a suspension of this same attempt, that row is carried
-- forward (this claim's run, worker, end and outcome; its start kept) instead of a row per poll.
-- An event wait's suspension looks for its event once more: one sent after the wait looked and
-- before this suspension woke nobody (the job was still running), so the job is claimable now
-- instead of sleeping its event_poll (the match is event_find's).
-- A row going dead leaves jobs.job for jobs.job_done; every other outcome keeps it live in place.
with done as (
    update only jobs.job j
    set state = %(state)s,
        run_at = case
            when %(state)s = 'suspended' and %(wait)s::jsonb->>'kind' = 'event' and exists (
                select 1 from jobs.event e
                where e.name = %(wait)s::jsonb->>'event' and e.tenant is not distinct from j.tenant
                  and e.payload @> coalesce(%(wait)s::jsonb->'match', '{}'::jsonb)
                  and e.sent_at >= j.created_at and e.sent_at <= %(now)s
                  and not exists (select 1 from jobs.step s where s.job_id = j.id and s.event_id = e.id)
            ) then %(now)s
            else coalesce(%(run_at)s, j.run_at) end,
        attempt = case when %(counts)s then j.attempt else j.attempt - 1 end,
        last_error = case when %(writes_error)s then %(error)s else j.last_error end,
        error_code = case when %(writes_error)s then %(error_code)s else j.error_code end,
        stop_reason = %(stop_reason)s,
        wait = %(wait)s::jsonb,
        -- A shed keeps the first shed's: the row waits since it first fell due (its run_at then).
        waiting_since = case when %(state)s = 'parked' then coalesce(j.waiting_since, j.run_at) end,
        finished_at = null,
        lease_until = null, updated_at = %(now)s
    where j.id = %(id)s and j.state = 'running' and j.claimed_by = %(worker)s and j.run = %(run)s
      and %(state)s::text <> 'dead'
    returning j.id, j.run, j.attempt, j.claimed_by, j.claimed_at
), gone as (
    delete from only jobs.job j
    where j.id = %(id)s and j.state = 'running' and j.claimed_by = %(worker)s and j.run = %(run)s
      and %(state)s::text = 'dead'
    returning j.*
), dead as (
    insert into jobs.job_done_now
        -- include: job_columns
    select id, name, queue, tenant, idempotency_key, input, result, 'dead', priority,
           case when %(counts)s then attempt else attempt - 1 end, max_attempts, run,
           coalesce(%(run_at)s, run_at), created_at, %(now)s, claimed_by, claimed_at, null, %(now)s,
           case when %(writes_error)s then %(error)s else last_error end,
           case when %(writes_error)s then %(error_code)s else error_code end,
           %(stop_reason)s, %(wait)s::jsonb, null, trace
    from gone
    returning id, run, attempt, claimed_by, claimed_at
), settled as (
    select * from done union all select * from dead
), resumed as (
    select a.job_id, a.run from jobs.attempt a join settled on a.job_id = settled.id
    where a.run = (select max(run) from jobs.attempt where job_id = settled.id) and a.outcome = 'suspended'
      and a.attempt = settled.attempt + case when %(counts)s then 0 else 1 end
), carried as (
    update jobs.attempt a
    set run = settled.run, worker = settled.claimed_by, finished_at = %(now)s, outcome = %(attempt_outcome)s,
        error_code = %(error_code)s, error = %(error)s, traceback = %(traceback)s, fix = %(fix)s
    from settled, resumed
    where a.job_id = resumed.job_id and a.run = resumed.run
), rec as (
    insert into jobs.attempt (job_id, run, attempt, worker, started_at, finished_at, outcome, error_code, error,
                              traceback, fix)
    select id, run, attempt + case when %(counts)s then 0 else 1 end, claimed_by, claimed_at, %(now)s,
           %(attempt_outcome)s, %(error_code)s, %(error)s, %(traceback)s, %(fix)s
    from settled where not exists (select 1 from resumed)
)
select id from settled;

-- name: job_renew_many :many
-- Extend the leases of a batch of claims, fenced; answer per claim ok | cancelled | lost.
with r as (
    select * from unnest(%(ids)b::uuid[], %(workers)b::text[], %(runs)b::int[]) as t(id, worker, run)
), upd as (
    update jobs.job j
    set lease_until = %(now)s + %(lease_seconds)s * interval '1 second'
    from r
    where j.id = r.id and j.state = 'running' and j.claimed_by = r.worker and j.run = r.run
    returning j.id, j.lease_until
)
select r.id,
       case when upd.id is not null then 'ok'
            when j.state = 'cancelled' and j.claimed_by = r.worker and j.run = r.run then 'cancelled'
            else 'lost' end as status,
       upd.lease_until
from r
left join upd on upd.id = r.id
left join jobs.job j on j.id = r.id;

-- name: job_cancel :one
-- Cancel one live job, for this tenant only when a tenant is given (I25); answer its old state.
-- The row leaves jobs.job for jobs.job_done.
with old as (
    select id, state from jobs.job
    where id = %(id)s and (%(tenant)s::text is null or tenant = %(tenant)s::text)
    for update
), gone as (
    delete from only jobs.job j
    using old
    where j.id = old.id and old.state in ('ready','delayed','running','suspended','parked')
    returning j.*
),
-- include: cancel_settled
hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'cancelled', %(actor)s, %(note)s, jsonb_build_object('from', (select state from old))
    from upd
), ran as (
    select upd.id, upd.run, upd.attempt, upd.claimed_by, upd.claimed_at
    from upd join old on old.id = upd.id
    where old.state = 'running' and upd.claimed_by is not null and upd.claimed_at is not null
), resumed as (
    -- A running claim that resumed a suspended run continues its attempt row (as job_nack does).
    select a.job_id, a.run from jobs.attempt a join ran on a.job_id = ran.id
    where a.run = (select max(run) from jobs.attempt where job_id = ran.id) and a.outcome = 'suspended'
      and a.attempt = ran.attempt
), carried as (
    update jobs.attempt a
    set run = ran.run, worker = ran.claimed_by, finished_at = %(now)s, outcome = 'cancelled'
    from ran, resumed
    where a.job_id = resumed.job_id and a.run = resumed.run
), rec as (
    -- A running job's attempt ends here: recorded with outcome cancelled (its claim ran, so it counts).
    insert into jobs.attempt (job_id, run, attempt, worker, started_at, finished_at, outcome)
    select id, run, attempt, claimed_by, claimed_at, %(now)s, 'cancelled'
    from ran where not exists (select 1 from resumed)
    on conflict (job_id, run) do nothing
)
select old.id, old.state as previous, upd.id is not null as cancelled
from old left join upd on upd.id = old.id;

-- name: job_get :one
-- One job row by id.
select * from jobs.job where id = %(id)s;

-- name: job_get_many :many
-- The rows of those ids that name a job (a step's wait for other jobs reads its set at each look).
select * from jobs.job where id = any(%(ids)s::uuid[]);

-- name: job_awaited_by :many
-- The suspended fan-ins that wait for a job (their wait names its id): a probe of job_awaited
-- (0018). No order: ordered by id, the planner walked the primary key instead (the driver sorts).
select * from only jobs.job
where state = 'suspended' and wait ->> 'kind' = 'jobs' and wait -> 'jobs' ? %(id)s
limit 20;

-- name: job_history :many
-- A job's history, oldest first.
select job_id, at, kind, actor, note, data from jobs.history where job_id = %(id)s order by id;

-- name: job_attempts :many
-- A job's settled attempts, in claim order: the attempt rows, and a completed job's last attempt
-- from the row itself (the ack writes no attempt row; one written before it stopped is not doubled).
-- A completing claim that resumed a suspended run continues that run's attempt (job_nack): the
-- suspension's row, the latest and of the same attempt, is shown as the completed attempt it became.
with done as (
    select j.id, j.run, j.attempt, j.claimed_by, j.claimed_at, j.finished_at
    from jobs.job j
    where j.id = %(id)s and j.state = 'completed' and j.claimed_by is not null
      and not exists (select 1 from jobs.attempt a where a.job_id = j.id and a.run = j.run)
), resumed as (
    select a.run, a.started_at from jobs.attempt a join done on a.job_id = done.id
    where a.run = (select max(run) from jobs.attempt where job_id = done.id) and a.outcome = 'suspended'
      and a.attempt = done.attempt
)
select job_id, run, attempt, worker, started_at, finished_at, outcome, error_code, error, traceback, fix
from jobs.attempt where job_id = %(id)s and run not in (select run from resumed)
union all
select id, run, attempt, claimed_by, coalesce((select started_at from resumed), claimed_at), finished_at, 'completed',
       null, null, null, null
from done
order by run;
