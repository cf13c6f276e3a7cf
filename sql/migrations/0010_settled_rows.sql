-- 0010: settled rows leave the hot table. jobs.job keeps the live rows (ready, delayed, running,
-- suspended, parked) and the indexes the hot path reads; completed, dead and cancelled rows live in
-- jobs.job_done, an inheritance child of jobs.job, with the console's list indexes. A read of
-- jobs.job reads both (constraint exclusion skips jobs.job_done when a state filter rules it out);
-- a statement that settles a row deletes it from jobs.job and inserts it into jobs.job_done, and a
-- retry moves it back. docs/internals.md ("Where rows live") has the measurements.
--
-- Without downtime: every statement here is catalog-only or on an empty table, each lock short.
-- The settled rows already in jobs.job stay there, still read through jobs.job (job_finished_at
-- indexes them), and are moved in batches by job_move_settled while workers run: `jobsctl migrate`
-- moves them after applying this file, and the maintenance leader moves any that a worker of the
-- previous release settles in place meanwhile.

create table jobs.job_done (
    constraint job_done_state check (state in ('completed','dead','cancelled'))
) inherits (jobs.job);
alter table jobs.job_done add constraint job_done_pkey primary key (id);

-- The console's lists: five btree indexes and a GIN on jobs.job become, for its live rows (the
-- running ones are listed from job_running), job_list_queue_state (kept), one composite for
-- name, tenant and key prefix (a filter on a later column alone is a skip scan), and the GIN
-- (fastupdate: an enqueue appends to its pending list); the settled rows get the full set.
drop index jobs.job_list_state;
drop index jobs.job_list_name;
drop index jobs.job_list_tenant;
drop index jobs.job_list_key;
alter index jobs.job_list_input rename to job_live_input;
create index job_live_list on jobs.job (name, tenant, idempotency_key text_pattern_ops) where state <> 'running';
drop index jobs.job_dead_v5;
drop index jobs.job_dead_code;
create index job_done_queue_state on jobs.job_done (queue, state, id desc);
create index job_list_state on jobs.job_done (state, id desc);
create index job_list_name on jobs.job_done (name, id desc);
create index job_list_tenant on jobs.job_done (tenant, id desc) where tenant is not null;
create index job_list_key on jobs.job_done (idempotency_key text_pattern_ops);
create index job_list_input on jobs.job_done using gin (input jsonb_path_ops);
-- The pruner's oldest-first batches and the throughput rollup (jobs.job keeps job_finished_at for
-- rows settled in place by an older release, until they are moved).
create index job_done_finished_at on jobs.job_done (finished_at);
-- Dead letters grouped by (name, code, stop reason, tenant), index-only; and one code, newest first.
create index job_dead_v5 on jobs.job_done (name, error_code, stop_reason, tenant, finished_at)
    include (queue) where state = 'dead';
create index job_dead_code on jobs.job_done (error_code, id desc) where state = 'dead';
create statistics jobs.job_done_queue_state_mcv (mcv) on queue, state from jobs.job_done;
