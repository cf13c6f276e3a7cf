-- The operator actions: retry a dead job, bulk retry and cancel (with their dry run), pause.
-- Each change is conditional on the state it applies to (fenced: a retry moves a row that is
-- still dead, a cancel a live one) and writes its audit entry in jobs.history in the same
-- statement. Tenant-aware: a tenant given narrows the row (I25). The job filter is introspect.sql's
-- fragment job_filter (`-- include: job_filter`).

-- name: job_retry_dead :one
-- Make one dead job ready again, attempts reset, unless a live row holds its dedupe key (then
-- nothing changes and that row is named). Answers the old state either way.
with old as (
    select id, name, tenant, idempotency_key, state from jobs.job
    where id = %(id)s and (%(tenant)s::text is null or tenant = %(tenant)s::text)
    for update
), holder as (
    select l.id from old
    join jobs.job l on l.name = old.name and coalesce(l.tenant, '') = coalesce(old.tenant, '')
                   and l.idempotency_key = old.idempotency_key
                   and l.state in ('ready','delayed','running','suspended','parked')
    limit 1
), upd as (
    update jobs.job j
    set state = 'ready', attempt = 0, run_at = %(now)s, updated_at = %(now)s, finished_at = null,
        result = null, stop_reason = null, wait = null, waiting_since = null, lease_until = null
    from old
    where j.id = old.id and old.state = 'dead' and not exists (select 1 from holder)
    returning j.id
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'retried', %(actor)s, %(note)s, jsonb_build_object('from', 'dead') from upd
)
select old.id, old.state as previous, upd.id is not null as changed,
       (select id from holder) as holder_id
from old left join upd on upd.id = old.id;

-- name: job_bulk_groups :many
-- A bulk action's dry run: the jobs it applies to (retry: dead; cancel: live) that the filter
-- matches, grouped by stop reason, error code and tenant.
select stop_reason, error_code, tenant, count(*)::int as n
from jobs.job
where (case when %(action)s = 'retry' then state = 'dead'
            else state in ('ready','delayed','running','suspended','parked') end)
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

-- name: job_bulk_retry :one
-- One batch of a bulk retry: the next %(limit)s matching dead rows below %(before)s, newest
-- first; of each dedupe key one row goes live, and none whose key a live row already holds.
with batch as (
    select id, name, tenant, idempotency_key
    from jobs.job
    where state = 'dead' and (%(before)s::uuid is null or id < %(before)s::uuid)
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
), upd as (
    update jobs.job j
    set state = 'ready', attempt = 0, run_at = %(now)s, updated_at = %(now)s, finished_at = null,
        result = null, stop_reason = null, wait = null, waiting_since = null, lease_until = null
    from pick where j.id = pick.id and j.state = 'dead'
    returning j.id
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'retried', %(actor)s, %(note)s, jsonb_build_object('from', 'dead', 'bulk', %(label)s::text)
    from upd
)
select (select count(*) from batch)::int as scanned,
       (select id from batch order by id limit 1) as last_id,
       array(select id::text from upd order by id desc) as changed;

-- name: job_bulk_cancel :one
-- One batch of a bulk cancel: the next %(limit)s matching live rows below %(before)s, newest
-- first (a running one's worker sees the cancel at its next lease renewal).
with batch as (
    select id, state
    from jobs.job
    where state in ('ready','delayed','running','suspended','parked')
      and (%(before)s::uuid is null or id < %(before)s::uuid)
      -- include: job_filter
    order by id desc
    limit %(limit)s
    for update
), upd as (
    update jobs.job j
    set state = 'cancelled', finished_at = %(now)s, updated_at = %(now)s, lease_until = null
    from batch where j.id = batch.id
    returning j.id, batch.state as previous
), hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'cancelled', %(actor)s, %(note)s, jsonb_build_object('from', previous, 'bulk', %(label)s::text)
    from upd
)
select (select count(*) from batch)::int as scanned,
       (select id from batch order by id limit 1) as last_id,
       array(select id::text from upd order by id desc) as changed;

-- name: queue_pause_set :one
-- Pause or resume a queue (durable; the claim skips paused queues). Changing nothing when it is
-- already in that state: `changed` is false and the row answered is the one that stands.
with cur as (
    select name, paused, paused_by, paused_at, note from jobs.queue where name = %(queue)s
), up as (
    insert into jobs.queue as q (name, paused, paused_by, paused_at, note)
    select %(queue)s, %(paused)s, %(actor)s, %(now)s, %(note)s
    where %(paused)s or exists (select 1 from cur)  -- resuming a queue never paused: a no-op
    on conflict (name) do update
        set paused = excluded.paused, paused_by = excluded.paused_by,
            paused_at = excluded.paused_at, note = excluded.note
        where q.paused is distinct from excluded.paused
    returning name, paused, paused_by, paused_at, note
)
select up.name, up.paused, up.paused_by, up.paused_at, up.note, true as changed from up
union all
select cur.name, cur.paused, cur.paused_by, cur.paused_at, cur.note, false from cur
where not exists (select 1 from up);
