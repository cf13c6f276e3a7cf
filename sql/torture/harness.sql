-- The torture harness's own statements (bench/torture): setting up the application's login,
-- injecting faults, watching the completion count, and reading everything the checks compare.

-- name: torture_role :exec
-- The application's login (its password is in the DSN every worker gets: the logs must never
-- show it). Run through a client-side cursor, which binds the password into the text.
create role torture_app login password %(password)s in role jobs_writer;

-- name: torture_completed :one
-- The completion count the harness samples (its timeline gives the rates around each fault).
select count(*)::bigint as n from jobs.job where state = 'completed';

-- name: torture_app_backends :many
-- The engine's sessions in this database (the workers' pools, LISTEN and presence connections),
-- for the backend-kill fault: not the ledger's nor the exhaustion's (named), nor the harness's
-- (it connects as another role).
select pid from pg_stat_activity
where usename = 'torture_app' and datname = current_database() and backend_type = 'client backend'
  and application_name not like 'torture-%%';

-- name: torture_terminate :one
-- End one backend, as an operator or a failover would.
select pg_terminate_backend(%(pid)s) as ended;

-- name: torture_hold :one
-- What an idle-in-transaction session that holds its connection runs first.
select 1 as held;

-- name: torture_running :many
-- Running jobs and the process that holds each (the stall picks a worker with work in flight).
select j.id::text as id, j.run, j.claimed_by, w.pid
from jobs.job j join jobs.worker w on w.id = j.claimed_by
where j.state = 'running';

-- name: torture_workers :many
-- The registered workers: which process is which worker id.
select id, pid from jobs.worker;

-- name: torture_live :one
-- Jobs still live in the torture queue (the end waits for none but the legitimately waiting).
select count(*)::bigint as n from jobs.job
where queue = 'torture' and state in ('ready', 'delayed', 'running', 'parked', 'suspended');

-- name: torture_jobs :many
-- Every job of the run, for the checks.
select id::text as id, name, idempotency_key as key, state, run, attempt, max_attempts, stop_reason,
       error_code, result, claimed_by, finished_at, created_at, run_at, wait
from jobs.job where queue = 'torture';

-- name: torture_state_counts :many
-- The direct count of the torture queue's jobs by state (the projections must agree).
select state, count(*)::bigint as n from jobs.job where queue = 'torture' group by state;

-- name: torture_executions :many
-- The ledger: every execution of a handler or a step.
select job_id::text as job_id, key, kind, run, attempt, step, pid, token::text as token
from torture.execution;

-- name: torture_steps :many
-- Every stored step of the run's jobs.
select s.job_id::text as job_id, s.name, s.kind, s.status, s.run, s.result
from jobs.step s join jobs.job j on j.id = s.job_id
where j.queue = 'torture';

-- name: torture_attempts :many
-- Every attempt record of the run's jobs (a completed attempt lives on the job row instead).
select a.job_id::text as job_id, a.run, a.attempt, a.worker, a.outcome
from jobs.attempt a join jobs.job j on j.id = a.job_id
where j.queue = 'torture';

-- name: torture_outbox :many
-- Every staged row: its key and whether it was published.
select idempotency_key as key, published_at is not null as published from jobs.outbox;

-- name: torture_orders :many
-- The application rows the staging transactions wrote (present: that transaction committed).
select key from torture.orders;

-- name: torture_schedule :many
-- The cron task's watermark and the occurrences catch-up skipped.
select task, watermark, skipped from jobs.schedule_state;

-- name: torture_table_stats :one
-- The jobs tables' dead tuples and size, jobs.job and its child jobs.job_done together (the soak
-- watches both stay bounded).
select coalesce(sum(n_dead_tup), 0)::bigint as dead, coalesce(sum(n_live_tup), 0)::bigint as live,
       (pg_total_relation_size('jobs.job') + pg_total_relation_size('jobs.job_done'))::bigint as bytes,
       coalesce(sum(autovacuum_count), 0)::bigint as autovacuums
from pg_stat_user_tables where relid in ('jobs.job'::regclass, 'jobs.job_done'::regclass);

-- name: torture_operator_changes :many
-- The operator's changes to jobs as their histories record them (the producer acts as "torture"),
-- each named as the audit log names it.
select job_id::text as target,
       case kind when 'cancelled' then 'job.cancel' when 'retried' then 'job.retry'
                 else 'job.retry_from_step' end as action
from jobs.history
where actor = 'torture' and kind in ('cancelled', 'retried', 'retried-from-step');

-- name: torture_audit :many
-- The audit log's entries of the operator's changes to jobs.
select target, action from jobs.audit_log where actor = 'torture' and action like 'job.%%';
