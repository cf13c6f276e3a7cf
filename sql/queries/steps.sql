-- Durable steps and events: the step store a replay reads, the fenced step write, the per-step
-- trace, durable events (send, wake, match) and retry from a step.
-- A step write is fenced on the claimant (claimed_by + run, state running) like every mutation
-- of a claimed row (I10, I15): a cancelled, timed-out or re-delivered run can never write.

-- name: step_load :many
-- Every stored step of a job, with its result: what a replay returns instead of running again.
select job_id, name, seq, kind, status, attempt, run, started_at, finished_at, result, error,
       wait, event_id
from jobs.step where job_id = %(job_id)s
order by seq, name;

-- name: step_save_many :many
-- Write a group of steps of claimed jobs in one statement, each only while its own claim holds
-- (FOR SHARE waits out a cancel), and answer the steps written: the writes of one loop that came
-- in while the previous group was on the wire (group commit: a lone write goes out at once as a
-- group of one). The rows are one jsonb array, [job_id, worker, run, name, seq, kind, status,
-- attempt, started_at, finished_at, {"v": result} or null, error, result_size, wait or null,
-- event_id] each: the wrapper tells a stored JSON null result from no result at all.
with s as (
    select (e->>0)::uuid as job_id, e->>1 as worker, (e->>2)::int as run, e->>3 as name,
           (e->>4)::int as seq, e->>5 as kind, e->>6 as status, (e->>7)::int as attempt,
           (e->>8)::timestamptz as started_at, (e->>9)::timestamptz as finished_at,
           e->10->'v' as result, e->>11 as error, (e->>12)::int as result_size,
           nullif(e->13, 'null'::jsonb) as wait, (e->>14)::uuid as event_id
    from jsonb_array_elements(%(rows)s::jsonb) as t(e)
), held as (
    select j.id, j.claimed_by, j.run from jobs.job j
    where j.id = any(array(select job_id from s)) and j.state = 'running'
    for share
)
insert into jobs.step (job_id, name, seq, kind, status, attempt, run, started_at, finished_at,
                       result, error, result_size, wait, event_id)
select s.job_id, s.name, s.seq, s.kind, s.status, s.attempt, s.run, s.started_at, s.finished_at,
       s.result, s.error, s.result_size, s.wait, s.event_id
from s join held h on h.id = s.job_id and h.claimed_by = s.worker and h.run = s.run
on conflict (job_id, name) do update
    set seq = excluded.seq, kind = excluded.kind, status = excluded.status,
        attempt = excluded.attempt, run = excluded.run, started_at = excluded.started_at,
        finished_at = excluded.finished_at, result = excluded.result, error = excluded.error,
        result_size = excluded.result_size, wait = excluded.wait, event_id = excluded.event_id
returning job_id::text, name;

-- name: step_enqueued_by :many
-- The jobs whose enqueue step (ctx.step.enqueue) enqueued this id, with that step's name: one
-- probe of step_enqueued (0019). At most 5, by parent id (a key replayed by several fan-outs
-- answers each of them).
select s.job_id::text as job_id, s.name
from jobs.step s
where s.kind = 'enqueue' and s.result ? %(id)s
order by s.job_id
limit 5;

-- name: step_list :many
-- A job's step trace in order (no results: the sizes only), for the console's timeline.
select job_id, name, seq, kind, status, attempt, started_at, finished_at,
       extract(epoch from (finished_at - started_at))::float8 as duration, error, result_size
from jobs.step where job_id = %(job_id)s
order by seq, name;

-- name: event_send :one
-- Store one event and make every suspended wait it matches claimable now (event_poll is the
-- fallback bound, this is the fast path): same name, same tenant, payload contains the match;
-- each job it wakes gets an `event` history entry naming the event and its sender.
with ev as (
    insert into jobs.event (id, name, tenant, payload, sent_at, sent_by)
    values (%(id)s, %(name)s, %(tenant)s, %(payload)s::jsonb, %(now)s, %(actor)s)
    returning id, name, tenant, payload, sent_at
), woke as (
    update jobs.job j
    set run_at = %(now)s, updated_at = %(now)s
    from ev
    where j.state = 'suspended' and (j.wait->>'event') = ev.name and j.wait->>'kind' = 'event'
      and j.tenant is not distinct from ev.tenant
      and ev.payload @> coalesce(j.wait->'match', '{}'::jsonb)
      and j.created_at <= ev.sent_at
      and j.run_at > %(now)s
    -- Wakes idle workers of the woken jobs' queues (the worker listens on jobs_enqueue).
    returning j.id, pg_notify('jobs_enqueue', j.queue) as notified
), hist as (
    -- Each woken job's history says which event woke it and who sent it.
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select woke.id, %(now)s, 'event', %(actor)s, null, jsonb_build_object('event', ev.name, 'event_id', ev.id)
    from woke, ev
)
select ev.id, ev.name, ev.tenant, ev.sent_at, (select count(*) from woke)::int as woken from ev;

-- name: event_find :one
-- The earliest event a wait of this job takes: same name and tenant, payload contains the match,
-- sent at or after the job was created, and not already taken by another step of the job.
select e.id, e.name, e.tenant, e.payload, e.sent_at, e.sent_by
from jobs.event e
where e.name = %(name)s and e.tenant is not distinct from %(tenant)s::text
  and e.payload @> %(match)s::jsonb
  and e.sent_at >= %(since)s and e.sent_at <= %(now)s
  and not exists (select 1 from jobs.step s where s.job_id = %(job_id)s and s.event_id = e.id)
order by e.sent_at, e.id
limit 1;

-- name: job_lock_for_step_retry :one
-- Lock one job for a retry from a step, for this tenant only when a tenant is given (I25).
select id, name, queue, tenant, idempotency_key, state from jobs.job
where id = %(id)s and (%(tenant)s::text is null or tenant = %(tenant)s::text)
for update;

-- name: step_discard_from :many
-- Drop the stored results of a step and every later one (by seq); earlier ones are kept.
delete from jobs.step where job_id = %(job_id)s and seq >= %(seq)s
returning name, seq;

-- name: job_reset_from_step :one
-- Make a dead or completed job ready again with its attempts reset, and write the history entry.
-- A completed job's last attempt lived on the row (job_ack_many): it is written out first.
with prior as (
    select id, run, attempt, claimed_by, claimed_at, finished_at from jobs.job
    where id = %(id)s and state = 'completed' and claimed_by is not null
), kept as (
    -- A row an older release settled in place, not yet moved to jobs.job_done: revived in place.
    update only jobs.job
    set state = 'ready', attempt = 0, run_at = %(now)s, updated_at = %(now)s, finished_at = null,
        result = null, stop_reason = null, wait = null, waiting_since = null, lease_until = null
    where id = %(id)s and state in ('dead','completed')
    returning id, queue
), back as (
    delete from jobs.job_done where id = %(id)s and state in ('dead','completed')
    returning *
),
-- include: revive_settled
upd as (
    select id, pg_notify('jobs_enqueue', queue) as notified from (select * from kept union all select * from moved) r
), resumed as (
    -- The completing claim resumed a suspended run: that run's row becomes the completed attempt.
    select a.job_id, a.run from jobs.attempt a join prior on a.job_id = prior.id
    where a.run = (select max(run) from jobs.attempt where job_id = prior.id) and a.outcome = 'suspended'
      and a.attempt = prior.attempt and exists (select 1 from upd)
), carried as (
    update jobs.attempt a
    set run = prior.run, worker = prior.claimed_by, finished_at = prior.finished_at, outcome = 'completed'
    from prior, resumed
    where a.job_id = resumed.job_id and a.run = resumed.run
), att as (
    insert into jobs.attempt (job_id, run, attempt, worker, started_at, finished_at, outcome)
    select id, run, attempt, claimed_by, coalesce(claimed_at, finished_at), finished_at, 'completed'
    from prior where exists (select 1 from upd) and not exists (select 1 from resumed)
    on conflict (job_id, run) do nothing
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'retried-from-step', %(actor)s, %(note)s, %(data)s::jsonb from upd
)
select id from upd;
