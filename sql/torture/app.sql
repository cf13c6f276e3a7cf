-- The torture run's application (bench/torture/app.py): its own schema in the queue's database,
-- as an application's tables would be. Installed by the harness as the superuser; the workers
-- write it as the application's login, which may only insert and read (append-only).

-- name: torture_app_install :exec
-- The ledger every handler and step appends one row to per execution, and the table a staging
-- transaction writes beside its stage (the application's "order").
create schema torture;
create table torture.execution (
    id      bigint generated always as identity primary key,
    job_id  uuid not null,
    key     text not null,             -- the input's unique key: ties a row to what the harness enqueued
    kind    text not null,             -- plain, steps, sleep, wait, slow, terminal, ...
    run     integer not null,          -- the claim it ran under (jobs.job.run)
    attempt integer not null,
    step    text not null,             -- '' for the handler itself, else the step's name
    pid     integer not null,          -- the worker process
    token   uuid not null,             -- this execution's own id: a stored step result names it
    at      timestamptz not null default clock_timestamp()
);
create index execution_job on torture.execution (job_id, step, run);
create table torture.orders (
    key       text primary key,
    staged_at timestamptz not null default clock_timestamp()
);

-- name: torture_app_grant :exec
-- The application's login appends to the ledger and reads it; it may not rewrite history.
grant usage on schema torture to torture_app;
grant select, insert on torture.execution, torture.orders to torture_app;

-- name: torture_record :exec
-- One execution of a handler ('' step) or of a step body.
insert into torture.execution (job_id, key, kind, run, attempt, step, pid, token)
values (%(job_id)s, %(key)s, %(kind)s, %(run)s, %(attempt)s, %(step)s, %(pid)s, %(token)s);

-- name: torture_order :exec
-- The application's own write in a staging transaction.
insert into torture.orders (key) values (%(key)s);
