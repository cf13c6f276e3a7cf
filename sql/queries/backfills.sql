-- Backfills (I22): the ledger jobs.backfill, one row per pass, and the pass jobs behind it.
-- A completed row is never edited: every update below is fenced on status <> 'completed'.

-- name: backfill_open :one
-- Write a pass's ledger row unless its id is there already (the starter writes it; a pass whose
-- starter died between the enqueue and this writes it when it begins). Answers the id when written.
insert into jobs.backfill (id, name, environment, status, dry_run, forced, job_id, app_version, actor, started_at)
values (%(id)s, %(name)s, %(environment)s, 'queued', %(dry_run)s, %(forced)s, %(job_id)s, %(app_version)s,
        %(actor)s, %(now)s)
on conflict (id) do nothing
returning id;

-- name: backfill_begin :one
-- A pass (or a resumed one) is running: count() at its first start is kept, the last error cleared,
-- and this run's start and the rows swept before it are stamped (its rate is read over this run).
update jobs.backfill
set status = 'running', planned = coalesce(planned, %(planned)s), error = null, finished_at = null,
    resumed_at = %(now)s, resumed_swept = swept
where id = %(id)s and status <> 'completed'
returning id;

-- name: backfill_progress :one
-- A batch landed: the pass's totals (absolute, so a replay writes the same numbers), only while its
-- job is still held by this claim: a cancelled or re-delivered pass learns it here, before its next batch.
update jobs.backfill b
set swept = %(swept)s, batches = %(batches)s
where b.id = %(id)s and b.status = 'running'
  and exists (select 1 from jobs.job j
              where j.id = %(job_id)s and j.state = 'running' and j.claimed_by = %(worker)s and j.run = %(run)s)
returning b.id;

-- name: backfill_finish :one
-- A pass's outcome: completed, failed, stalled or cancelled, with its totals and error when given
-- (a cancel's pass finishing after the action keeps the action's "cancelled by").
update jobs.backfill
set status = %(outcome)s, finished_at = %(now)s, error = coalesce(%(error)s, error),
    swept = coalesce(%(swept)s, swept), batches = coalesce(%(batches)s, batches)
where id = %(id)s and status <> 'completed'
returning id;

-- name: backfill_runs :many
-- The ledger history, newest first: of these names (null: every one), in this environment (null: all).
select id, name, environment, job_id, status, dry_run, forced, started_at, app_version, actor, finished_at,
       planned, swept, batches, error, resumed_at, resumed_swept
from jobs.backfill
where (%(names)s::text[] is null or name = any(%(names)s::text[]))
  and (%(environment)s::text is null or environment = %(environment)s::text)
order by started_at desc, id desc
limit %(limit)s;

-- name: backfill_applied :many
-- The latest completed write pass of each backfill in one environment: what makes it applied.
select distinct on (name)
       id, name, environment, job_id, status, dry_run, forced, started_at, app_version, actor, finished_at,
       planned, swept, batches, error, resumed_at, resumed_swept
from jobs.backfill
where environment = %(environment)s and status = 'completed' and not dry_run
order by name, finished_at desc, id desc;

-- name: backfill_live :many
-- The live pass jobs of these job names (the dedupe index's leading column and predicate).
select id, name, state from jobs.job
where name = any(%(names)s::text[]) and state in ('ready','delayed','running','suspended','parked')
order by name, id;

-- name: backfill_pass_resume :one
-- Make a dead or cancelled pass job ready again with its steps kept, so the pass replays the
-- batches it finished and continues at the one it stopped on; attempts reset, audited. A live
-- holder of its key (another pass of the name) changes nothing and is named.
with old as (
    select id, name, tenant, idempotency_key, state from jobs.job where id = %(id)s for update
),
-- include: key_holder
kept as (
    -- A row an older release settled in place, not yet moved to jobs.job_done: revived in place.
    update only jobs.job j
    set state = 'ready', attempt = 0, run_at = %(now)s, updated_at = %(now)s, finished_at = null,
        result = null, stop_reason = null, wait = null, waiting_since = null, lease_until = null
    from old
    where j.id = old.id and old.state in ('dead','cancelled') and not exists (select 1 from holder)
    returning j.id, j.queue
), back as (
    delete from jobs.job_done d
    using old
    where d.id = old.id and old.state in ('dead','cancelled') and not exists (select 1 from holder)
    returning d.*
),
-- include: revive_settled
upd as (
    select id, queue from kept union all select id, queue from moved
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'retried', %(actor)s, %(note)s, jsonb_build_object('from', (select state from old)) from upd
)
-- The pass made ready wakes its queue's idle workers, as an enqueue does (delivered at commit).
-- Its ledger row (the newest naming the job) names the backfill and the pass for the audit entry.
select old.id, old.state as previous, upd.id is not null as changed, (select id from holder) as holder_id,
       case when upd.queue is not null then pg_notify('jobs_enqueue', upd.queue) is null end as woke,
       old.name as job_name, b.id as run_id, b.name as backfill, b.environment, b.dry_run
from old left join upd on upd.id = old.id
left join lateral (
    select id, name, environment, dry_run from jobs.backfill
    where job_id = old.id order by started_at desc, id desc limit 1
) b on true;

-- name: django_migrations_applied :many
-- On the application's connection: every migration Django has applied (it records each one).
select app, name from django_migrations;

-- name: alembic_heads :many
-- On the application's connection: Alembic's applied heads (it records only the heads).
select version_num from alembic_version;
