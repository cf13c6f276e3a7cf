-- The ONE install point (I3): every durable table the engine owns, re-runnable on a live
-- database. `jobsctl install` runs this file whole, in one transaction. Superseded indexes are
-- dropped here, because an old, narrower unique index left in place keeps enforcing exactly the
-- collision its successor fixes.

create schema if not exists jobs;

create table if not exists jobs.meta (
    key   text primary key,
    value text not null
);

-- Jobs -------------------------------------------------------------------------------------------

create table if not exists jobs.job (
    id              uuid primary key,          -- UUIDv7, minted by the engine: time-ordered
    name            text not null,
    queue           text not null,
    tenant          text,
    idempotency_key text not null,
    input           jsonb not null default 'null',
    result          jsonb,
    state           text not null check (state in
                      ('ready','delayed','running','suspended','parked','completed','dead','cancelled')),
    priority        integer not null default 0,
    attempt         integer not null default 0,   -- attempts burned
    max_attempts    integer not null check (max_attempts >= 1),
    run             integer not null default 0,   -- claims so far: the fence token with claimed_by
    run_at          timestamptz not null,
    created_at      timestamptz not null,
    updated_at      timestamptz not null,
    claimed_by      text,
    claimed_at      timestamptz,
    lease_until     timestamptz,
    finished_at     timestamptz,
    last_error      text,
    error_code      text,
    stop_reason     text check (stop_reason in ('terminal','attempts-exhausted')),
    wait            jsonb,                         -- why a suspended/parked row waits
    waiting_since   timestamptz                    -- a parked row: when it first fell due (below)
);
-- A parked row waits since it first fell due, however often a limit has shed it since: each shed
-- rewrites run_at (when it may be tried again) and updated_at, so neither can say it (I24).
alter table jobs.job add column if not exists waiting_since timestamptz;

-- I2: the dedupe namespace is (name, tenant or '', key) over the live states. The insert's
-- conflict target spells this expression exactly, or Postgres cannot infer the index.
create unique index if not exists job_dedupe_live_v3 on jobs.job
    (name, (coalesce(tenant, '')), idempotency_key)
    where state in ('ready','delayed','running','suspended','parked');
-- Superseded: the key alone (two job names collided), then (name, key) (two tenants collided).
drop index if exists jobs.job_dedupe_live_v1;
drop index if exists jobs.job_dedupe_live_v2;

-- The claim: per queue, priority then due time then id, over the claimable states only.
create index if not exists job_claim on jobs.job (queue, priority desc, run_at, id)
    where state in ('ready','delayed','parked','suspended');
-- Running rows by id: the ack's and the fence's probes, the lists' running arm (newest first) and
-- the rescuer's scan (running rows are bounded by the fleet's slots). Keyed by id, not lease_until:
-- no index names lease_until, so a lease renewal is a HOT update that writes no index at all, and
-- an ack's `id = any(...) and state = 'running'` can only probe by id. Supersedes
-- job_running_lease (lease_until), which a bitmap scan in the ack read whole, dead entries and
-- all, on every batch: an ack's cost grew with every job the table had ever run.
create index if not exists job_running on jobs.job (id) where state = 'running';
drop index if exists jobs.job_running_lease;
-- Projections. The lists' indexes leave out running rows: the claim (ready -> running) writes
-- none of them, so a drain's claim touches only the primary key, the dedupe and the lease
-- indexes. (State is indexed, so no update is HOT: every state change writes every index the new
-- row version matches.) Running rows, bounded by the fleet's slots, are listed from the lease
-- index. Superseded: the same indexes over every state (job_*_id), then over finished rows only
-- (job_done_*, which sent each live-row page through a heap walk of every live row).
create index if not exists job_list_queue_state on jobs.job (queue, state, id desc) where state <> 'running';
create index if not exists job_list_state on jobs.job (state, id desc) where state <> 'running';
create index if not exists job_list_name on jobs.job (name, id desc) where state <> 'running';
create index if not exists job_list_tenant on jobs.job (tenant, id desc)
    where tenant is not null and state <> 'running';
drop index if exists jobs.job_live_id;
drop index if exists jobs.job_done_queue_state;
drop index if exists jobs.job_done_state;
drop index if exists jobs.job_done_name;
drop index if exists jobs.job_done_tenant;
-- The planner's view of how rows fall over (queue, state) together: a backlog sits in one queue's
-- ready rows, which the per-column statistics (queue x state, as if independent) would smear over
-- every queue. The queues view's capped counts answer this estimate (queue_count_estimate).
create statistics if not exists jobs.job_queue_state_mcv (mcv) on queue, state from jobs.job;
-- Suspended rows per queue (the overview's count): written only when a job suspends, never on
-- the enqueue-claim-ack path.
create index if not exists job_suspended on jobs.job (queue, id) where state = 'suspended';
drop index if exists jobs.job_queue_state_id;
drop index if exists jobs.job_state_id;
drop index if exists jobs.job_name_id;
drop index if exists jobs.job_tenant_id;
-- Dead letters grouped by (name, code, stop reason, tenant), first/last seen: read index-only.
-- Plain columns only: Postgres reads an index-only scan only when every column the query names is
-- in the index, and an expression (coalesce(error_code, '')) does not count, so v3's expressions
-- sent all 30k dead rows to the heap (21 -> 11 ms at 1M). Supersedes job_dead (no stop_reason),
-- job_dead_v2 and job_dead_v3 (expressions).
create index if not exists job_dead_v5 on jobs.job (name, error_code, stop_reason, tenant, finished_at)
    include (queue) where state = 'dead';
-- v4 had no queue: the worker's dead-letter gauge (per queue) read every dead row from the heap.
drop index if exists jobs.job_dead_v4;
drop index if exists jobs.job_dead;
drop index if exists jobs.job_dead_v2;
drop index if exists jobs.job_dead_v3;
-- Dead letters of one error code, newest first (the list's code filter, a bulk retry's plan).
create index if not exists job_dead_code on jobs.job (error_code, id desc) where state = 'dead';
-- Throughput reads job_finished_at (below): a per-queue copy of it only cost every ack a write.
drop index if exists jobs.job_finished;
drop index if exists jobs.job_finished_v2;
-- Search by key prefix (LIKE 'inv:%') in any collation; equality too (running rows: the lease
-- index). Supersedes job_key, job_key_v2 (every state) and job_done_key (finished rows).
create index if not exists job_list_key on jobs.job (idempotency_key text_pattern_ops) where state <> 'running';
drop index if exists jobs.job_done_key;
drop index if exists jobs.job_key;
drop index if exists jobs.job_key_v2;
-- A queue's oldest waiting row and its depth (ready, parked and due delayed rows), index-only: a
-- ready or delayed row waits since its run_at, a parked one since waiting_since (updated_at for a
-- row parked before that column). Supersedes job_waiting, which had no waiting_since.
create index if not exists job_waiting_v2 on jobs.job (queue, state, run_at) include (updated_at, waiting_since)
    where state in ('ready','delayed','parked');
drop index if exists jobs.job_waiting;
-- The jobs list filtered by a field of the input (input.invoice_id=42): jsonb containment (running
-- rows: the lease index). Supersedes job_input (every state) and job_done_input (finished rows).
create index if not exists job_list_input on jobs.job using gin (input jsonb_path_ops) where state <> 'running';
drop index if exists jobs.job_done_input;
drop index if exists jobs.job_input;
-- The worker: when an idle worker's queues next fall due (ready rows are due: the claim index
-- answers for them). Not over ready rows: an enqueue does not write it, and the claim cannot pick
-- it over job_claim. Supersedes job_next_due (every claimable state), which the planner chose for
-- the claim on a table whose statistics predate a burst of enqueues, then sorted the whole
-- backlog on every claim (61 ms a claim at 60,000 ready rows, against 5 ms on job_claim).
create index if not exists job_due on jobs.job (queue, run_at) where state in ('delayed','parked','suspended');
drop index if exists jobs.job_next_due;
-- The pruner's oldest-first batches and the throughput sparkline.
create index if not exists job_finished_at on jobs.job (finished_at)
    where state in ('completed','cancelled','dead');

-- One row per settled claim: worker, start, end, outcome, error.
create table if not exists jobs.attempt (
    job_id      uuid not null,
    run         integer not null,
    attempt     integer not null,
    worker      text not null,
    started_at  timestamptz not null,
    finished_at timestamptz not null,
    outcome     text not null,    -- completed | retried | dead | suspended | parked | released | lost | cancelled
    error_code  text,
    error       text,
    primary key (job_id, run)
);

-- Durable steps: a result is persisted before the step returns (I9).
create table if not exists jobs.step (
    job_id      uuid not null,
    name        text not null,
    seq         integer not null,
    kind        text not null default 'run',   -- run | sleep | event
    status      text not null,                 -- completed | failed | waiting | timed-out
    attempt     integer not null,
    run         integer not null,
    started_at  timestamptz not null,
    finished_at timestamptz,
    result      jsonb,
    error       text,
    result_size integer,
    primary key (job_id, name)
);
-- A waiting sleep's end or the event wait it describes; the event a completed wait consumed (one
-- event is taken once per job, so two waits on one event name in a loop each take their own).
alter table jobs.step add column if not exists wait jsonb;
alter table jobs.step add column if not exists event_id uuid;
-- Sending an event wakes the suspended waits on its name at once (event_poll is the fallback).
create index if not exists job_event_wait on jobs.job ((wait->>'event')) where state = 'suspended';

-- Events sent to waiting jobs. Durable, so an event sent before the wait is reached is not lost.
create table if not exists jobs.event (
    id      uuid primary key,
    name    text not null,
    tenant  text,
    payload jsonb not null default '{}',
    sent_at timestamptz not null,
    sent_by text
);
create index if not exists event_name_sent on jobs.event (name, sent_at, id);

-- A job's history: lifecycle facts and operator actions (who, when, what, the incident note).
create table if not exists jobs.history (
    id      bigint generated always as identity primary key,
    job_id  uuid not null,
    at      timestamptz not null,
    kind    text not null,
    actor   text,
    note    text,
    data    jsonb not null default '{}'
);
create index if not exists history_job on jobs.history (job_id, id);

-- No foreign key from attempt, step or history to jobs.job: its check ran a trigger per attempt
-- row (~15% of a drain). Their rows are written in the statement that fences on the job row, and
-- the pruner deletes them with the job in one statement (maintenance.sql job_prune).
alter table jobs.attempt drop constraint if exists attempt_job_id_fkey;
alter table jobs.step drop constraint if exists step_job_id_fkey;
alter table jobs.history drop constraint if exists history_job_id_fkey;

-- Workers, queues, limits, leaders -------------------------------------------------------------

create table if not exists jobs.worker (
    id           text primary key,
    host         text not null,
    pid          integer not null,
    queues       text[] not null,
    concurrency  integer not null,
    in_use       integer not null default 0,
    started_at   timestamptz not null,
    heartbeat_at timestamptz not null,
    stopping     boolean not null default false
);

create table if not exists jobs.queue (
    name      text primary key,
    paused    boolean not null default false,
    paused_by text,
    paused_at timestamptz,
    note      text
);

-- Fleet-wide concurrency slots: one row per (key, slot), held by a job under a lease.
create table if not exists jobs.slot (
    key         text not null,
    slot        integer not null,
    job_id      uuid,
    worker      text,
    lease_until timestamptz,
    primary key (key, slot)
);

-- Rate-limit buckets (token bucket per key).
create table if not exists jobs.rate_bucket (
    key         text primary key,
    tokens      double precision not null,
    refilled_at timestamptz not null
);

-- Leader leases (maintenance, scheduler), fenced by a term that grows on every change of holder.
create table if not exists jobs.leader (
    name        text primary key,
    holder      text not null,
    term        bigint not null,
    lease_until timestamptz not null
);

-- The fleet's last count of its queue gauges (I24): one row, taken at most once per
-- gauges_interval by whichever worker finds it stale (sql/queries/worker.sql: queue_gauges).
-- gauges: [[queue, depth, oldest waiting since, dead], ...] as of taken_at.
create table if not exists jobs.gauge_snapshot (
    id       smallint primary key check (id = 1),
    taken_at timestamptz not null,
    gauges   jsonb not null
);
insert into jobs.gauge_snapshot (id, taken_at, gauges) values (1, '-infinity', '[]') on conflict (id) do nothing;

-- Completions per queue per calendar minute, rolled up by the maintenance leader once a minute has
-- closed and settled (sql/queries/maintenance.sql: throughput_rollup): the queues view's sparkline
-- reads these for every minute before jobs.meta's throughput_rolled_until and counts only the rows
-- after it, so its cost does not grow with the completion rate (an hour at 100 jobs/s held 360,000
-- rows to read on every refresh). Two hours kept.
create table if not exists jobs.throughput_minute (
    minute    timestamptz not null,
    queue     text not null,
    completed integer not null,
    primary key (minute, queue)
);
insert into jobs.meta (key, value) values ('throughput_rolled_until', '-infinity') on conflict (key) do nothing;

-- Transactional outbox (I16-I20) ------------------------------------------------------------------

create table if not exists jobs.outbox (
    id              uuid primary key,            -- UUIDv7: (staged_at, id) is stage order
    staged_at       timestamptz not null,
    name            text not null,
    queue           text not null,
    tenant          text,
    idempotency_key text not null,
    input           jsonb not null default 'null',
    run_at          timestamptz,
    max_attempts    integer not null default 1,
    priority        integer not null default 0,
    claimed_at      timestamptz,
    claimed_by      text,
    published_at    timestamptz,
    job_id          uuid,
    last_error      text
);
create index if not exists outbox_unpublished on jobs.outbox (staged_at, id) where published_at is null;

-- Scheduler (I21) ----------------------------------------------------------------------------------

create table if not exists jobs.schedule_state (
    task       text primary key,
    watermark  timestamptz not null,            -- last scheduled instant enqueued
    updated_at timestamptz not null
);

-- Backfills (I22) ----------------------------------------------------------------------------------

create table if not exists jobs.backfill (
    id           uuid primary key,
    name         text not null,
    environment  text not null,
    status       text not null check (status in ('running','completed','failed')),
    forced       boolean not null default false,
    job_id       uuid,
    started_at   timestamptz not null,
    completed_at timestamptz,
    swept        bigint not null default 0,
    error        text
);
create index if not exists backfill_name_env on jobs.backfill (name, environment, completed_at);

insert into jobs.meta (key, value) values ('schema_version', '3')
    on conflict (key) do update set value = excluded.value
    where jobs.meta.value::int < excluded.value::int;
