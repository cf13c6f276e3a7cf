-- The cron scheduler (I21): task declarations, the durable watermark, the fenced enqueue of an
-- occurrence, pause/resume/trigger, and the leader's tick. Every statement takes %(now)s. The
-- leader's lease is jobs.leader (name 'scheduler', maintenance.sql's leader_acquire).

-- name: schedule_declare :exec
-- Upsert the declarations a scheduler process holds (a jsonb array of [name, cron, timezone,
-- catch_up, max_catch_up, queue, max_attempts, priority, input]). A new task's owed occurrences
-- start after %(now)s; a known task keeps its watermark, skipped count and pause.
insert into jobs.schedule_state as s (task, watermark, updated_at, cron, timezone, catch_up, max_catch_up,
                                      queue, max_attempts, priority, input, declared_at, seen_at)
select e->>0, null, %(now)s, e->>1, e->>2, e->>3, (e->>4)::int, e->>5, (e->>6)::int, (e->>7)::int, e->8, %(now)s,
       %(now)s
from jsonb_array_elements(%(tasks)s::jsonb) as t(e)
on conflict (task) do update
set cron = excluded.cron, timezone = excluded.timezone, catch_up = excluded.catch_up,
    max_catch_up = excluded.max_catch_up, queue = excluded.queue, max_attempts = excluded.max_attempts,
    priority = excluded.priority, input = excluded.input, updated_at = %(now)s
where (s.cron, s.timezone, s.catch_up, s.max_catch_up, s.queue, s.max_attempts, s.priority, s.input)
      is distinct from (excluded.cron, excluded.timezone, excluded.catch_up, excluded.max_catch_up,
                        excluded.queue, excluded.max_attempts, excluded.priority, excluded.input);

-- name: schedule_seen :exec
-- A scheduler process still knows these tasks (%(tasks)s, their names): stamp them seen now. A task
-- no process has stamped for engine.schedule.RETIRED_AFTER is retired (ScheduleRow.retired).
update jobs.schedule_state set seen_at = %(now)s
where task = any(%(tasks)s::text[]) and seen_at < %(now)s;

-- name: schedule_list :many
-- Every declared task with its state and the state of its last enqueued occurrence's job.
select s.task, s.cron, s.timezone, s.catch_up, s.max_catch_up, s.queue, s.declared_at, s.watermark,
       s.skipped, s.last_at, s.last_job_id, j.state as last_job_state, s.paused, s.paused_by,
       s.paused_at, s.note, s.seen_at
from jobs.schedule_state s
left join jobs.job j on j.id = s.last_job_id
order by s.task collate "C";

-- name: schedule_advance :one
-- One step of a tick, in one statement (one transaction): move the task's watermark from
-- %(expected)s to %(at)s, add %(skipped)s occurrences skipped by catch-up, and with a %(job_id)s
-- enqueue the occurrence at %(at)s keyed %(key)s (I21). Fenced twice: on the leader's term (the
-- lease row is locked for share, so a handover waits for this write or this write sees the new
-- holder and writes nothing), and on the watermark (compare and set: a step planned from a
-- watermark someone has moved since writes nothing). A paused task is never advanced.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
    for share
), moved as (
    update jobs.schedule_state s
    set watermark = %(at)s, skipped = s.skipped + %(skipped)s, updated_at = %(now)s,
        last_at = case when %(job_id)s::uuid is null then s.last_at else %(at)s end,
        last_job_id = coalesce(%(job_id)s::uuid, s.last_job_id)
    where s.task = %(task)s and s.watermark is not distinct from %(expected)s::timestamptz
      and not s.paused and exists (select 1 from leader)
    returning s.task, s.queue, s.max_attempts, s.priority, s.input
), ins as (
    insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, priority,
                          max_attempts, run_at, created_at, updated_at)
    select %(job_id)s::uuid, m.task, m.queue, null, %(key)s,
           jsonb_build_object('task', m.task, 'scheduled_for', %(scheduled_for)s::text,
                              'trigger', 'cron', 'input', m.input),
           'ready', m.priority, m.max_attempts, %(now)s, %(now)s, %(now)s
    from moved m
    where %(job_id)s::uuid is not null
    on conflict (name, (coalesce(tenant, '')), idempotency_key)
        where state in ('ready','delayed','running','suspended','parked')
        do nothing
    returning id, queue
), woke as (
    select pg_notify('jobs_enqueue', queue) from ins
)
select (select count(*) from moved)::int as moved, (select id from ins) as inserted,
       (select count(*) from woke)::int as woke;

-- name: schedule_pause_set :one
-- Pause or resume a task (audited on its row like a queue's pause: who, when, the note). A resume
-- moves the watermark to %(now)s: what fell due while it was paused is not owed. Already in that
-- state: `changed` is false and the row answered is the one that stands. No row: no such task.
with cur as (
    select task, paused, paused_by, paused_at, note from jobs.schedule_state where task = %(task)s
), up as (
    update jobs.schedule_state s
    set paused = %(paused)s, paused_by = %(actor)s, paused_at = %(now)s, note = %(note)s, updated_at = %(now)s,
        watermark = case when %(paused)s then s.watermark else greatest(s.watermark, %(now)s) end
    where s.task = %(task)s and s.paused is distinct from %(paused)s
    returning s.task, s.paused, s.paused_by, s.paused_at, s.note
)
select up.task, up.paused, up.paused_by, up.paused_at, up.note, true as changed from up
union all
select cur.task, cur.paused, cur.paused_by, cur.paused_at, cur.note, false from cur
where not exists (select 1 from up);

-- name: schedule_trigger :one
-- An operator's occurrence now: a job of the task built from its stored declaration, keyed
-- %(key)s (never an occurrence's key), with a 'triggered' entry on its history naming who. The
-- watermark is not touched: the cron's own occurrences go on as declared. No row: no such task.
with t as (
    select task, queue, max_attempts, priority, input from jobs.schedule_state where task = %(task)s
), ins as (
    insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, priority,
                          max_attempts, run_at, created_at, updated_at)
    select %(job_id)s::uuid, t.task, t.queue, null, %(key)s,
           jsonb_build_object('task', t.task, 'scheduled_for', %(scheduled_for)s::text,
                              'trigger', 'manual', 'input', t.input),
           'ready', t.priority, t.max_attempts, %(now)s, %(now)s, %(now)s
    from t
    on conflict (name, (coalesce(tenant, '')), idempotency_key)
        where state in ('ready','delayed','running','suspended','parked')
        do nothing
    returning id, queue
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'triggered', %(actor)s, %(note)s, jsonb_build_object('task', %(task)s::text) from ins
), woke as (
    select pg_notify('jobs_enqueue', queue) from ins
)
select (select count(*) from t)::int as found, (select id from ins) as id, (select count(*) from woke)::int as woke;

-- name: schedule_leader_tick :one
-- The leader stamps its process and the time of this tick, fenced on its term.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), up as (
    insert into jobs.schedule_leader as t (name, holder, host, pid, term, ticked_at)
    select %(leader)s, %(holder)s, %(host)s, %(pid)s, %(term)s, %(now)s
    where exists (select 1 from leader)
    on conflict (name) do update
    set holder = excluded.holder, host = excluded.host, pid = excluded.pid, term = excluded.term,
        ticked_at = excluded.ticked_at
    returning 1
)
select count(*)::int as ticked from up;

-- name: schedule_leader_get :one
-- The scheduler's lease and its holder's last tick (none when the holder has not ticked in this term).
select l.holder, l.term, l.lease_until, t.host, t.pid, t.ticked_at
from jobs.leader l
left join jobs.schedule_leader t on t.name = l.name and t.term = l.term and t.holder = l.holder
where l.name = %(leader)s;
