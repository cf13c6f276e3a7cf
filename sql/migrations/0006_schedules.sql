-- 0006: the cron scheduler (I21). Each task's declaration, durable watermark (the last scheduled
-- instant settled: enqueued or skipped by catch-up), pause and last occurrence; and the leader's
-- process and last tick (its lease is jobs.leader's 'scheduler' row, fenced on its term).
alter table jobs.schedule_state
    alter column watermark drop not null,      -- null: a new task owes the occurrences after its declaration
    add column cron text not null default '',
    add column timezone text not null default 'UTC',
    add column catch_up text not null default 'skip',
    add column max_catch_up integer not null default 100,
    add column queue text not null default 'default',
    add column max_attempts integer not null default 1,
    add column priority integer not null default 0,
    add column input jsonb not null default 'null',
    add column declared_at timestamptz not null default now(),
    add column skipped bigint not null default 0,   -- occurrences catch-up settled without a job
    add column last_at timestamptz,
    add column last_job_id uuid,
    add column paused boolean not null default false,
    add column paused_by text,
    add column paused_at timestamptz,
    add column note text;

create table jobs.schedule_leader (
    name      text primary key,
    holder    text not null,
    host      text not null,
    pid       integer not null,
    term      bigint not null,
    ticked_at timestamptz not null
);
