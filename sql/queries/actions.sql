-- The operator actions: retry a dead job, discard a dead letter, bulk retry, cancel and discard
-- (with their dry run), pause and resume a queue, ask a worker to drain, find a job by a short id.
-- Each change is conditional on the state it applies to (fenced: a retry moves a row that is
-- still dead, a cancel a live one) and writes its audit entry in jobs.history in the same
-- statement. Tenant-aware: a tenant given narrows the row (I25). The job filter is introspect.sql's
-- fragment job_filter (`-- include: job_filter`).

-- fragment: revive_settled
-- A retry's move back (`back`: the settled rows it deleted from jobs.job_done, every column):
-- each enters jobs.job as ready, attempts reset, result, lease and stop cleared (the columns in
-- table order, as job_columns names them). Answers id and queue.
moved as (
    insert into jobs.job (id, name, queue, tenant, idempotency_key, input, result, state, priority, attempt,
                          max_attempts, run, run_at, created_at, updated_at, claimed_by, claimed_at, lease_until,
                          finished_at, last_error, error_code, stop_reason, wait, waiting_since, trace)
    select id, name, queue, tenant, idempotency_key, input, null, 'ready', priority, 0, max_attempts, run,
           %(now)s, created_at, %(now)s, claimed_by, claimed_at, null, null, last_error, error_code,
           null, null, null, trace
    from back
    returning id, queue
),

-- fragment: key_holder
-- The live row that holds the dedupe key of `old` (a row being revived), other than that row
-- itself (I2): a revival would make a second live holder, so it changes nothing and names it.
holder as (
    select l.id from old
    join jobs.job l on l.name = old.name and coalesce(l.tenant, '') = coalesce(old.tenant, '')
                   and l.idempotency_key = old.idempotency_key
                   and l.state in ('ready','delayed','running','suspended','parked')
                   and l.id <> old.id
    limit 1
),

-- fragment: cancel_settled
-- A cancel's move (`gone`: the live rows it deleted from jobs.job, every column): each enters
-- jobs.job_done as cancelled, finished now, its lease cleared (the columns in table order, as
-- job_columns names them). Answers id, run, attempt, claimed_by, claimed_at.
upd as (
    insert into jobs.job_done_now (id, name, queue, tenant, idempotency_key, input, result, state, priority, attempt,
                               max_attempts, run, run_at, created_at, updated_at, claimed_by, claimed_at,
                               lease_until, finished_at, last_error, error_code, stop_reason, wait, waiting_since, trace)
    select id, name, queue, tenant, idempotency_key, input, result, 'cancelled', priority, attempt,
           max_attempts, run, run_at, created_at, %(now)s, claimed_by, claimed_at, null, %(now)s,
           last_error, error_code, stop_reason, wait, waiting_since, trace
    from gone
    returning id, run, attempt, claimed_by, claimed_at
),

-- name: job_retry_dead :one
-- Make one dead job ready again, attempts reset, unless a live row holds its dedupe key (then
-- nothing changes and that row is named). Answers the old state either way, and the job's name,
-- queue and tenant (its audit log entry's).
with old as (
    select id, name, queue, tenant, idempotency_key, state from jobs.job
    where id = %(id)s and (%(tenant)s::text is null or tenant = %(tenant)s::text)
    for update
),
-- include: key_holder
kept as (
    -- A dead row an older release settled in place, not yet moved to jobs.job_done: revived in place.
    update only jobs.job j
    set state = 'ready', attempt = 0, run_at = %(now)s, updated_at = %(now)s, finished_at = null,
        result = null, stop_reason = null, wait = null, waiting_since = null, lease_until = null
    from old
    where j.id = old.id and old.state = 'dead' and not exists (select 1 from holder)
    returning j.id, j.queue
), back as (
    delete from jobs.job_done d
    using old
    where d.id = old.id and old.state = 'dead' and not exists (select 1 from holder)
    returning d.*
),
-- include: revive_settled
upd as (
    select id, queue from kept union all select id, queue from moved
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'retried', %(actor)s, %(note)s, jsonb_build_object('from', 'dead') from upd
)
-- A job made ready wakes its queue's idle workers, as an enqueue does (delivered at commit).
select old.id, old.state as previous, upd.id is not null as changed, old.name, old.queue, old.tenant,
       (select id from holder) as holder_id, case when upd.queue is not null then pg_notify('jobs_enqueue', upd.queue) is null end as woke
from old left join upd on upd.id = old.id;

-- name: job_bulk_groups :many
-- A bulk action's dry run: the jobs it applies to (retry, discard: dead; cancel: live) that the
-- filter matches, grouped by stop reason, error code and tenant.
select stop_reason, error_code, tenant, count(*)::int as n
from jobs.job
where (case when %(action)s = 'cancel' then state in ('ready','delayed','running','suspended','parked')
            else state = 'dead' end)
  -- include: job_filter
group by 1, 2, 3
order by 4 desc, 1, 2, 3;

-- name: job_bulk_free_keys :one
-- A bulk retry's dry run: how many distinct dedupe keys among the matched dead jobs no live row
-- holds (only one row per key can go live; the rest would dedupe away).
select count(*)::int as n from (
    select distinct name, coalesce(tenant, '') as tenant, idempotency_key
    from jobs.job
    where state = 'dead'
      -- include: job_filter
) k
where not exists (
    select 1 from jobs.job l
    where l.name = k.name and coalesce(l.tenant, '') = k.tenant and l.idempotency_key = k.idempotency_key
      and l.state in ('ready','delayed','running','suspended','parked')
);

-- name: job_bulk_replays :one
-- A bulk retry's dry run: how many of the matched dead jobs stored a wait for jobs that answered
-- one of them not completed, or that timed out (a fan-in), and the newest of them. A plain retry
-- replays that stored answer, so such a fan-in meets it again even when the same bulk retries the
-- jobs it names; a retry with children runs the wait again. step_waits (0020) holds the wait
-- steps only.
select count(*)::int as n, max(id::text) as newest
from jobs.job
where state = 'dead'
  and id in (select s.job_id from jobs.step s
             where s.kind = 'jobs'
               and (s.status = 'timed-out' or jsonb_path_exists(s.result, '$[*] ? (@.state != "completed")')))
  -- include: job_filter
;

-- name: job_bulk_retry :one
-- One batch of a bulk retry: the next %(limit)s matching dead rows below %(before)s, newest
-- first (settled by %(upto)s, its dry run's instant, when given); of each dedupe key one row goes
-- live, and none whose key a live row already holds.
with batch as (
    select id, name, tenant, idempotency_key
    from jobs.job
    where state = 'dead' and (%(before)s::uuid is null or id < %(before)s::uuid)
      and (%(upto)s::timestamptz is null or finished_at <= %(upto)s::timestamptz)
      -- include: job_filter
    order by id desc
    limit %(limit)s
    for update
), pick as (
    select distinct on (b.name, coalesce(b.tenant, ''), b.idempotency_key) b.id
    from batch b
    where not exists (
        select 1 from jobs.job l
        where l.name = b.name and coalesce(l.tenant, '') = coalesce(b.tenant, '')
          and l.idempotency_key = b.idempotency_key
          and l.state in ('ready','delayed','running','suspended','parked'))
    order by b.name, coalesce(b.tenant, ''), b.idempotency_key, b.id desc
), kept as (
    -- Dead rows an older release settled in place, not yet moved to jobs.job_done: revived in place.
    update only jobs.job j
    set state = 'ready', attempt = 0, run_at = %(now)s, updated_at = %(now)s, finished_at = null,
        result = null, stop_reason = null, wait = null, waiting_since = null, lease_until = null
    from pick where j.id = pick.id and j.state = 'dead'
    returning j.id, j.queue
), back as (
    delete from jobs.job_done d
    using pick
    where d.id = pick.id and d.state = 'dead'
    returning d.*
),
-- include: revive_settled
upd as (
    select id, queue from kept union all select id, queue from moved
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'retried', %(actor)s, %(note)s, jsonb_build_object('from', 'dead', 'bulk', %(label)s::text)
    from upd
)
select (select count(*) from batch)::int as scanned,
       (select id from batch order by id limit 1) as last_id,
       array(select id::text from upd order by id desc) as changed,
       -- The jobs made ready wake their queues' idle workers, once a queue (delivered at commit).
       (select count(*) from (select pg_notify('jobs_enqueue', q) from (select distinct queue from upd) d(q)) n) as woke;

-- name: job_bulk_cancel :one
-- One batch of a bulk cancel: the next %(limit)s matching live rows below %(before)s, newest
-- first, created by %(upto)s (its dry run's instant) when given, and unchanged since
-- %(unchanged_since)s when given (the same instant, for a filter on a field a live row changes:
-- a row claimed, retried or parked since may match now without having been counted; a lease
-- renewal changes no updated_at). A running one's worker sees the cancel at its next renewal.
with batch as (
    select id, state
    from jobs.job
    where state in ('ready','delayed','running','suspended','parked')
      and (%(before)s::uuid is null or id < %(before)s::uuid)
      and (%(upto)s::timestamptz is null or created_at <= %(upto)s::timestamptz)
      and (%(unchanged_since)s::timestamptz is null or updated_at <= %(unchanged_since)s::timestamptz)
      -- include: job_filter
    order by id desc
    limit %(limit)s
    for update
), gone as (
    delete from only jobs.job j
    using batch where j.id = batch.id
    returning j.*
),
-- include: cancel_settled
hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select upd.id, %(now)s, 'cancelled', %(actor)s, %(note)s, jsonb_build_object('from', batch.state, 'bulk', %(label)s::text)
    from upd join batch on batch.id = upd.id
)
select (select count(*) from batch)::int as scanned,
       (select id from batch order by id limit 1) as last_id,
       array(select id::text from upd order by id desc) as changed;

-- name: queue_pause_set :one
-- Pause or resume a queue (durable; the claim skips paused queues). A resume deletes the row, so
-- a queue paused by mistake leaves nothing behind (a row left unpaused by an older release goes
-- too). Changing nothing when it is already in that state: `changed` is false and the row
-- answered is the one that stands.
with cur as (
    select name, paused, paused_by, paused_at, note from jobs.queue where name = %(queue)s
), up as (
    insert into jobs.queue as q (name, paused, paused_by, paused_at, note)
    select %(queue)s, true, %(actor)s, %(now)s, %(note)s
    where %(paused)s
    on conflict (name) do update
        set paused = true, paused_by = excluded.paused_by, paused_at = excluded.paused_at, note = excluded.note
        where not q.paused
    returning name, paused, paused_by, paused_at, note
), gone as (
    -- A resumed queue's ready jobs wake its idle workers (delivered at commit).
    delete from jobs.queue where name = %(queue)s and not %(paused)s
    returning name, paused as was_paused, case when paused then pg_notify('jobs_enqueue', name) is null end as woke
)
select up.name, up.paused, up.paused_by, up.paused_at, up.note, true as changed from up
union all
select gone.name, false, %(actor)s::text, %(now)s::timestamptz, %(note)s::text, gone.was_paused from gone
union all
select cur.name, cur.paused, cur.paused_by, cur.paused_at, cur.note, false from cur
where not exists (select 1 from up) and not exists (select 1 from gone);

-- name: queue_names_known :many
-- Every queue something names: a job row in any state (a skip scan over the list index, one
-- probe per queue, and the running rows, few), a registered worker, a pause row.
with recursive q as (
    (select queue from jobs.job where state <> 'running' order by queue limit 1)
    union all
    select (select j.queue from jobs.job j where j.state <> 'running' and j.queue > q.queue
            order by j.queue limit 1)
    from q where q.queue is not null
)
select queue as name from q where queue is not null
union
select queue from jobs.job where state = 'running'
union
select unnest(queues) from jobs.worker
union
select name from jobs.queue
order by 1;

-- name: job_find_prefix :many
-- Jobs whose id begins with a hex fragment: the id range it spans (%(lo)s..%(hi)s), on the
-- primary key.
select id, name, queue, tenant, state, idempotency_key, priority, attempt, max_attempts, run_at,
       created_at, updated_at, finished_at, error_code, stop_reason
from jobs.job
where id between %(lo)s::uuid and %(hi)s::uuid
  and (%(tenant)s::text is null or tenant = %(tenant)s::text)
order by id
limit %(limit)s;

-- name: job_find_suffix :many
-- Jobs whose id ends with a hex fragment (the tail the console shows): the fragment's whole bytes
-- %(tail)s match the id's last bytes, and an odd leading digit %(nibble)s the low half of the byte
-- before them. No index serves a tail (a UUIDv7's tail is random), so this reads every id, under
-- the caller's budget: bytes, not text, and the ids first, the rows after. Asked only when no id
-- begins with the fragment.
with hit as materialized (
    select id from jobs.job
    where substring(uuid_send(id) from 17 - length(%(tail)s::bytea)) = %(tail)s::bytea
      and (%(nibble)s::int is null or get_byte(uuid_send(id), 15 - length(%(tail)s::bytea)) & 15 = %(nibble)s::int)
)
select j.id, j.name, j.queue, j.tenant, j.state, j.idempotency_key, j.priority, j.attempt, j.max_attempts,
       j.run_at, j.created_at, j.updated_at, j.finished_at, j.error_code, j.stop_reason
from hit join jobs.job j on j.id = hit.id
where (%(tenant)s::text is null or j.tenant = %(tenant)s::text)
order by j.id
limit %(limit)s;

-- name: job_discard :one
-- Discard one dead letter: delete its row with its attempts and steps, and replace its history
-- with one `discarded` entry (who, when, the note, what the job was), so the audit outlives the
-- row (the pruner would have deleted all of it). Answers the old state and what the job was (its
-- audit log entry's); `changed` is false when the job is no longer dead.
with old as (
    select id, name, queue, tenant, state, error_code, stop_reason, attempt, max_attempts
    from jobs.job
    where id = %(id)s and (%(tenant)s::text is null or tenant = %(tenant)s::text)
    for update
), gone as (
    delete from jobs.job j using old
    where j.id = old.id and old.state = 'dead'
    returning j.id
), attempts as (
    delete from jobs.attempt where job_id in (select id from gone)
), steps as (
    delete from jobs.step where job_id in (select id from gone)
), history as (
    delete from jobs.history where job_id in (select id from gone)
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select old.id, %(now)s, 'discarded', %(actor)s, %(note)s,
           jsonb_build_object('from', 'dead', 'name', old.name, 'queue', old.queue, 'tenant', old.tenant,
                              'error_code', old.error_code, 'stop_reason', old.stop_reason,
                              'attempt', old.attempt, 'max_attempts', old.max_attempts)
    from old join gone on gone.id = old.id
)
select old.id, old.state as previous, gone.id is not null as changed, old.name, old.queue, old.tenant,
       old.error_code, old.stop_reason
from old left join gone on gone.id = old.id;

-- name: job_bulk_discard :one
-- One batch of a bulk discard: the next %(limit)s matching dead rows below %(before)s, newest
-- first (settled by %(upto)s, its dry run's instant, when given), deleted as job_discard deletes
-- one (each keeps a `discarded` history entry).
with batch as (
    select id
    from jobs.job
    where state = 'dead' and (%(before)s::uuid is null or id < %(before)s::uuid)
      and (%(upto)s::timestamptz is null or finished_at <= %(upto)s::timestamptz)
      -- include: job_filter
    order by id desc
    limit %(limit)s
    for update
), gone as (
    delete from jobs.job j using batch
    where j.id = batch.id and j.state = 'dead'
    returning j.id, j.name, j.queue, j.tenant, j.error_code, j.stop_reason, j.attempt, j.max_attempts
), attempts as (
    delete from jobs.attempt where job_id in (select id from gone)
), steps as (
    delete from jobs.step where job_id in (select id from gone)
), history as (
    delete from jobs.history where job_id in (select id from gone)
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'discarded', %(actor)s, %(note)s,
           jsonb_build_object('from', 'dead', 'bulk', %(label)s::text, 'name', name, 'queue', queue,
                              'tenant', tenant, 'error_code', error_code, 'stop_reason', stop_reason,
                              'attempt', attempt, 'max_attempts', max_attempts)
    from gone
)
select (select count(*) from batch)::int as scanned,
       (select id from batch order by id limit 1) as last_id,
       array(select id::text from gone order by id desc) as changed;

-- name: worker_drain_request :one
-- Ask a registered worker to drain: its heartbeat answers the request (worker_heartbeat). The
-- first request stands: asking again changes nothing and answers it (`changed` false).
with cur as (
    select id, drain_requested_by, drain_requested_at, drain_note from jobs.worker where id = %(id)s
    for update
), up as (
    update jobs.worker w
    set drain_requested_by = %(actor)s, drain_requested_at = %(now)s, drain_note = %(note)s
    from cur
    where w.id = cur.id and cur.drain_requested_at is null
    returning w.id, w.drain_requested_by, w.drain_requested_at, w.drain_note
)
select id, drain_requested_by, drain_requested_at, drain_note, true as changed from up
union all
select id, drain_requested_by, drain_requested_at, drain_note, false from cur
where not exists (select 1 from up);
