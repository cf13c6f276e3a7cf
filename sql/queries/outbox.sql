-- The transactional outbox (I16-I20): staging on the caller's connection, the relay's leased claim,
-- the fenced mark and release, the operator's reads and the pruner. Every time-comparing statement
-- takes %(now)s. Every mutation of a claimed row is fenced on its claim_token (I18).

-- name: outbox_stage :one
-- Stage a batch on the CALLER's connection, inside the caller's transaction (I16). The batch is one
-- jsonb array of [id, name, queue, tenant, key, input, max_attempts, run_at, priority] rows, as
-- job_enqueue takes it, with the trace context eleventh when the stage has one. The NOTIFY is queued with the transaction: PostgreSQL delivers it at
-- commit (a rollback drops it with the rows), so relays wake the moment the rows become visible.
with ins as (
    insert into jobs.outbox (id, staged_at, name, queue, tenant, idempotency_key, input, max_attempts,
                             run_at, priority, trace)
    select (e->>0)::uuid, %(now)s, e->>1, e->>2, e->>3, e->>4, e->5, (e->>6)::int, (e->>7)::timestamptz,
           (e->>8)::int, e->10
    from jsonb_array_elements(%(rows)s::jsonb) as t(e)
    returning 1
)
select count(*) as staged, pg_notify('jobs_outbox', '') is null as woke from ins;

-- name: outbox_listen :exec
-- Subscribe a relay's wake-up connection to committed stages.
listen jobs_outbox;

-- name: outbox_claim :many
-- Lease up to %(limit)s unpublished rows to one claim in ONE statement (I17): the rows are locked
-- (SKIP LOCKED: two relays never wait on each other) and stamped with the claimant, its token and
-- the lease's end in the same statement, so the lock and the lease are one fact. A bare locking
-- select under autocommit would hold its locks only until it returned, and two relays polling a
-- moment apart would both publish the same rows. A row whose lease lapsed (its relay died) is
-- claimable again. The order is total, (staged_at, id): every row of one stage shares staged_at
-- and the UUIDv7 id breaks the tie in stage order. The outer ORDER BY is load-bearing: UPDATE ...
-- RETURNING has no defined row order, and the relay publishes in the order it is handed rows.
with picked as (
    select id from jobs.outbox
    where published_at is null and (claim_token is null or lease_until < %(now)s)
    order by staged_at, id
    limit %(limit)s
    for update skip locked
), claimed as (
    update jobs.outbox o
    set claimed_by = %(relay)s, claim_token = %(token)s, claimed_at = %(now)s,
        lease_until = %(now)s + %(lease_ms)s * interval '1 millisecond'
    -- By id array, not `from picked`: the join hashed a sequential scan of the whole table, and
    -- published rows stay for their retention (as job_claim in jobs.sql).
    where o.id = any(array(select id from picked))
    returning o.id, o.staged_at, o.name, o.queue, o.tenant, o.idempotency_key, o.input, o.run_at,
              o.max_attempts, o.priority, o.attempts, o.last_error, o.failed_at, o.trace
)
-- The columns the driver builds rows from, in this order (ids as text: no UUID objects); the
-- claim's own stamps are known to the caller.
select id::text, staged_at, name, queue, tenant, idempotency_key, input, run_at, max_attempts, priority,
       attempts, last_error, failed_at, trace
from claimed order by staged_at, id;

-- name: outbox_publish_batch :one
-- A whole relay pass as ONE statement when nothing fails: lock up to %(limit)s claimable rows in
-- (staged_at, id) order (I17, as outbox_claim), insert their jobs under the ids %(job_ids)s (the
-- i-th row of that order takes the i-th id), and stamp the rows claimed by %(relay)s/%(token)s
-- and published, all in one transaction: a lock, not a lease, holds them meanwhile, and no other
-- claim can see them until they are published. The insert is job_enqueue_fresh's: no ON CONFLICT,
-- so a row whose idempotency key a live job holds (I2), or any other failure, aborts the whole
-- statement with nothing written, and the relay takes the row-by-row path (claim, publish through
-- job_enqueue's dedupe, mark fenced, release on failure). Answers the ids published, in order.
-- A job exists from its stage: created_at is the row's staged_at, so a wait takes an event sent
-- between the stage and this publication.
with picked as (
    select id, staged_at, name, queue, tenant, idempotency_key, input, run_at, max_attempts, priority, trace
    from jobs.outbox
    where published_at is null and (claim_token is null or lease_until < %(now)s)
    order by staged_at, id
    limit %(limit)s
    for update skip locked
), numbered as (
    select p.*, (%(job_ids)s::uuid[])[row_number() over (order by p.staged_at, p.id)] as job_id
    from picked p
), ins as (
    insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, priority,
                          max_attempts, run_at, created_at, updated_at, trace)
    select job_id, name, queue, tenant, idempotency_key, input,
           case when run_at > %(now)s then 'delayed' else 'ready' end,
           priority, max_attempts, coalesce(run_at, %(now)s), staged_at, %(now)s, trace
    from numbered
    returning queue
), marked as (
    -- By id array (as outbox_claim), each row's job id found by its position in it.
    update jobs.outbox o
    set claimed_by = %(relay)s, claim_token = %(token)s, claimed_at = %(now)s, lease_until = null,
        published_at = %(now)s,
        job_id = (array(select job_id from numbered order by staged_at, id))[
            array_position(array(select id from numbered order by staged_at, id), o.id)]
    where o.id = any(array(select id from numbered)) and o.published_at is null
    returning o.id, o.staged_at
)
select (select array_agg(id::text order by staged_at, id) from marked) as ids,
       -- Wakes idle workers listening on jobs_enqueue: once per queue, as job_enqueue.
       (select count(*) from (select pg_notify('jobs_enqueue', q) from (select distinct queue from ins) as d(q)) n)
           as woke;

-- name: outbox_mark_published :many
-- Retire published rows, fenced on the claim that published them (I18): a relay whose lease lapsed
-- and whose rows another relay reclaimed retires nothing (its late mark would otherwise retire a
-- row nobody has published, and the job would be lost). First writer wins: a row already published
-- keeps its stamp. Answers the ids retired.
-- One probe of the primary key by id array, and each row's job id looked up by its position: a
-- join to unnest(...) ran fine as a custom plan and as a sequential scan of every retained row
-- once the prepared statement went generic (17 ms, then 200 ms a 500-row mark).
update jobs.outbox o
set published_at = %(now)s, lease_until = null,
    job_id = (%(job_ids)s::uuid[])[array_position(%(ids)s::uuid[], o.id)]
where o.id = any(%(ids)s::uuid[]) and o.claim_token = %(token)s and o.published_at is null
returning o.id;

-- name: outbox_release :many
-- Hand a claim's unpublished rows back at once (I20), fenced on its token (I18): claimable by the
-- next poll of any relay instead of after the lease. The row whose publish failed (%(failed)s, or
-- null) keeps the failure: one more attempt, its error and when. One statement, so no relay can
-- see a later row free while the failed one is still held. Answers the ids released.
update jobs.outbox
set claimed_by = null, claim_token = null, claimed_at = null, lease_until = null,
    attempts = attempts + case when id = %(failed)s::uuid then 1 else 0 end,
    last_error = case when id = %(failed)s::uuid then %(error)s::text else last_error end,
    failed_at = case when id = %(failed)s::uuid then %(now)s else failed_at end
where id = any(%(ids)s::uuid[]) and claim_token = %(token)s and published_at is null
returning id;

-- name: outbox_get :one
-- One outbox row by id: what "why is this row not published" reads.
select * from jobs.outbox where id = %(id)s;

-- name: outbox_backlog :one
-- The backlog (capped at %(cap)s: counting stops there), its oldest row, and publishes in the hour
-- before %(now)s. Index-only on outbox_unpublished and outbox_published. The backlog's ORDER BY is
-- the index's: without it the planner counted by a sequential scan, which reads every retained
-- published row (the oldest, at the table's head) before the first unpublished one.
select (select count(*) from (select 1 from jobs.outbox where published_at is null
                              order by staged_at, id limit %(cap)s) b)::int as backlog,
       (select staged_at from jobs.outbox where published_at is null order by staged_at, id limit 1) as oldest,
       (select count(*) from (select 1 from jobs.outbox
                              where published_at is not null and published_at > %(now)s - interval '1 hour'
                                and published_at <= %(now)s
                              limit %(cap)s) p)::int as published_last_hour;

-- name: outbox_holders :many
-- Unpublished rows held under a live lease, per claim: the relay, how many rows, until when.
select claimed_by as relay, claim_token as token, count(*)::int as rows, max(lease_until) as lease_until,
       min(staged_at) as oldest
from jobs.outbox
where published_at is null and claim_token is not null and lease_until >= %(now)s
group by claimed_by, claim_token
order by min(staged_at)
limit %(limit)s;

-- name: outbox_failing :many
-- Unpublished rows whose publish failed at least once, in stage order: attempts and last error.
select * from jobs.outbox
where published_at is null and attempts > 0
order by staged_at, id
limit %(limit)s;

-- name: outbox_head :many
-- The backlog's head: the oldest unpublished rows in stage order, the ones the next claim takes (or
-- that hold it up). The order and the filter are outbox_unpublished's, so it reads %(limit)s index
-- entries and their rows, whatever the backlog.
select * from jobs.outbox
where published_at is null
order by staged_at, id
limit %(limit)s;

-- name: outbox_relay_beat :exec
-- A relay's heartbeat (its row made on the first beat).
insert into jobs.outbox_relay (id, started_at, heartbeat_at) values (%(relay)s, %(now)s, %(now)s)
on conflict (id) do update set heartbeat_at = excluded.heartbeat_at;

-- name: outbox_relay_gone :exec
-- A relay that stopped cleanly removes its row.
delete from jobs.outbox_relay where id = %(relay)s;

-- name: outbox_relays :many
-- Relays whose heartbeat landed after %(since)s: the ones alive.
select id, started_at, heartbeat_at from jobs.outbox_relay where heartbeat_at > %(since)s order by id;

-- name: outbox_prune :one
-- Delete published rows older than %(before)s in a bounded batch, and relay rows whose heartbeat
-- stopped before %(before)s; fenced on the maintenance leader's term like the job pruner.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), doomed as (
    select id from jobs.outbox
    where published_at < %(before)s and exists (select 1 from leader)
    order by published_at
    limit %(limit)s
    for update skip locked
), gone as (
    delete from jobs.outbox o using doomed where o.id = doomed.id returning 1
), relays as (
    delete from jobs.outbox_relay where heartbeat_at < %(before)s and exists (select 1 from leader) returning 1
)
select (select count(*) from gone)::int as pruned;
