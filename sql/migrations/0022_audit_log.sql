-- 0022: the audit log. Every operator action that changed something (a queue paused or resumed,
-- a worker asked to drain, a job retried, cancelled or discarded, a bulk run, a
-- schedule paused, resumed or triggered, a backfill pass started, cancelled or retried) adds one
-- row, in the transaction of its change: who, when, what, on what, the note, and the tenant it
-- acted within (null: the whole fleet). A resumed queue's pause row goes; its row here stays.
-- The maintenance leader deletes rows older than `audit_retention`.
--
-- Without downtime: a new table and its indexes, empty; nothing else changes. A worker or an
-- operator of the previous release acts as before and adds no row.
create table jobs.audit_log (
    id bigint generated always as identity primary key,
    at timestamptz not null,
    actor text,
    action text not null,
    target text not null,
    tenant text,
    note text,
    detail jsonb not null default '{}'::jsonb
);
-- Newest first by time, then id: the log's order, the pruner's cut by time, and a target's own
-- entries (a queue's, a job's).
create index audit_log_at on jobs.audit_log (at, id);
create index audit_log_target on jobs.audit_log (target, at, id);
