-- 0001: the schema of the first release (0.1), squashed. Applied once by `jobsctl migrate`, in one
-- transaction under the migration lock, and recorded in jobs.migration. A database installed by
-- 0.1's schema.sql (jobs.meta schema_version 3) is recognised as holding it already.

create schema if not exists jobs;

create table jobs.meta (
    key   text primary key,
    value text not null
);

-- Jobs -------------------------------------------------------------------------------------------

create table jobs.job (
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
    -- A parked row: when it first fell due. Each shed rewrites run_at and updated_at, so neither can say it (I24).
    waiting_since   timestamptz
);

-- I2: the dedupe namespace, (name, tenant or '', key) over the live states; the insert's conflict target spells it exactly.
create unique index job_dedupe_live_v3 on jobs.job
    (name, (coalesce(tenant, '')), idempotency_key)
    where state in ('ready','delayed','running','suspended','parked');

-- The claim: per queue, priority then due time then id, over the claimable states only.
create index job_claim on jobs.job (queue, priority desc, run_at, id)
    where state in ('ready','delayed','parked','suspended');
-- Running rows by id (ack, fence, rescuer, lists); no index names lease_until, so a renewal is a HOT update.
create index job_running on jobs.job (id) where state = 'running';
-- The lists leave out running rows, so a claim (ready -> running) writes none of them.
create index job_list_queue_state on jobs.job (queue, state, id desc) where state <> 'running';
create index job_list_state on jobs.job (state, id desc) where state <> 'running';
create index job_list_name on jobs.job (name, id desc) where state <> 'running';
create index job_list_tenant on jobs.job (tenant, id desc)
    where tenant is not null and state <> 'running';
-- How rows fall over (queue, state) together, for the queues view's capped counts (queue_count_estimate).
create statistics jobs.job_queue_state_mcv (mcv) on queue, state from jobs.job;
-- Suspended rows per queue (the overview's count), written only when a job suspends.
create index job_suspended on jobs.job (queue, id) where state = 'suspended';
-- Dead letters grouped by (name, code, stop reason, tenant), read index-only: plain columns, no expressions.
create index job_dead_v5 on jobs.job (name, error_code, stop_reason, tenant, finished_at)
    include (queue) where state = 'dead';
-- Dead letters of one error code, newest first (the list's code filter, a bulk retry's plan).
create index job_dead_code on jobs.job (error_code, id desc) where state = 'dead';
-- Search by key prefix (LIKE 'inv:...') in any collation, and by equality.
create index job_list_key on jobs.job (idempotency_key text_pattern_ops) where state <> 'running';
-- A queue's oldest waiting row and its depth (ready, parked and due delayed rows), index-only.
create index job_waiting_v2 on jobs.job (queue, state, run_at) include (updated_at, waiting_since)
    where state in ('ready','delayed','parked');
-- The jobs list filtered by a field of the input (input.invoice_id=42): jsonb containment.
create index job_list_input on jobs.job using gin (input jsonb_path_ops) where state <> 'running';
-- When an idle worker's queues next fall due; not over ready rows, so an enqueue never writes it.
create index job_due on jobs.job (queue, run_at) where state in ('delayed','parked','suspended');
-- The pruner's oldest-first batches and the throughput sparkline.
create index job_finished_at on jobs.job (finished_at)
    where state in ('completed','cancelled','dead');

-- One row per settled claim: worker, start, end, outcome, error. No foreign key to jobs.job (nor
-- from step or history): its check ran a trigger per row; the pruner deletes them with the job.
create table jobs.attempt (
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
create table jobs.step (
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
    wait        jsonb,                         -- a waiting sleep's end or the event wait it describes
    event_id    uuid,                          -- the event a completed wait consumed (taken once per job)
    primary key (job_id, name)
);
-- Sending an event wakes the suspended waits on its name at once (event_poll is the fallback).
create index job_event_wait on jobs.job ((wait->>'event')) where state = 'suspended';

-- Events sent to waiting jobs. Durable, so an event sent before the wait is reached is not lost.
create table jobs.event (
    id      uuid primary key,
    name    text not null,
    tenant  text,
    payload jsonb not null default '{}',
    sent_at timestamptz not null,
    sent_by text
);
-- A wait's lookup of the events on its name since it began, in send order.
create index event_name_sent on jobs.event (name, sent_at, id);

-- A job's history: lifecycle facts and operator actions (who, when, what, the incident note).
create table jobs.history (
    id      bigint generated always as identity primary key,
    job_id  uuid not null,
    at      timestamptz not null,
    kind    text not null,
    actor   text,
    note    text,
    data    jsonb not null default '{}'
);
-- One job's history in order.
create index history_job on jobs.history (job_id, id);

-- Workers, queues, limits, leaders -------------------------------------------------------------

create table jobs.worker (
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

create table jobs.queue (
    name      text primary key,
    paused    boolean not null default false,
    paused_by text,
    paused_at timestamptz,
    note      text
);

-- Fleet-wide concurrency slots: one row per (key, slot), held by a job under a lease.
create table jobs.slot (
    key         text not null,
    slot        integer not null,
    job_id      uuid,
    worker      text,
    lease_until timestamptz,
    primary key (key, slot)
);

-- Rate-limit buckets (token bucket per key).
create table jobs.rate_bucket (
    key         text primary key,
    tokens      double precision not null,
    refilled_at timestamptz not null
);

-- Leader leases (maintenance, scheduler), fenced by a term that grows on every change of holder.
create table jobs.leader (
    name        text primary key,
    holder      text not null,
    term        bigint not null,
    lease_until timestamptz not null
);

-- The fleet's last count of its queue gauges (I24): one row, taken at most once per gauges_interval
-- by whichever worker finds it stale. gauges: [[queue, depth, oldest waiting since, dead], ...].
create table jobs.gauge_snapshot (
    id       smallint primary key check (id = 1),
    taken_at timestamptz not null,
    gauges   jsonb not null
);
insert into jobs.gauge_snapshot (id, taken_at, gauges) values (1, '-infinity', '[]');

-- Completions per queue per calendar minute, rolled up by the maintenance leader once a minute has
-- settled: the sparkline reads these before jobs.meta's throughput_rolled_until, so its cost does
-- not grow with the completion rate. Two hours kept.
create table jobs.throughput_minute (
    minute    timestamptz not null,
    queue     text not null,
    completed integer not null,
    primary key (minute, queue)
);
insert into jobs.meta (key, value) values ('throughput_rolled_until', '-infinity');

-- Transactional outbox (I16-I20) ------------------------------------------------------------------

create table jobs.outbox (
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
-- The relay's claim, in stage order, over unpublished rows only.
create index outbox_unpublished on jobs.outbox (staged_at, id) where published_at is null;

-- Scheduler (I21) ----------------------------------------------------------------------------------

create table jobs.schedule_state (
    task       text primary key,
    watermark  timestamptz not null,            -- last scheduled instant enqueued
    updated_at timestamptz not null
);

-- Backfills (I22) ----------------------------------------------------------------------------------

create table jobs.backfill (
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
-- A backfill's ledger per environment, latest pass last.
create index backfill_name_env on jobs.backfill (name, environment, completed_at);

-- The first release's engine refuses a database whose schema_version is below 3: kept, so a 0.1
-- worker still running during a rolling upgrade opens a database this release migrated.
insert into jobs.meta (key, value) values ('schema_version', '3');
