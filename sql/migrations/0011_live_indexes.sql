-- 0011: two fewer index entries for every row an enqueue writes. jobs.job had two pairs of
-- indexes over the same columns of the same live rows:
-- - the dedupe index (name, coalesce(tenant, ''), idempotency_key) and the console's
--   job_live_list (name, tenant, idempotency_key text_pattern_ops): the dedupe index now takes the
--   key in text_pattern_ops (the same equality, so the same uniqueness and the same arbiter for
--   ON CONFLICT, which names no operator class) and serves the lists' name, tenant and key-prefix
--   filters over live rows;
-- - job_waiting_v2 (queue, state, run_at) and job_list_queue_state (queue, state, id desc): one
--   index, (queue, state, id desc) with run_at, updated_at and waiting_since included, serves the
--   lists, the capped counts, the queue names' skip scan and the gauges' index-only counts.
-- docs/internals.md ("The indexes") has the measurements.
--
-- Without downtime: the two builds read jobs.job under a SHARE lock (enqueues and acks wait for
-- them; since 0010 jobs.job holds only live rows). The dedupe index keeps its name: every
-- release's driver recognises a replayed key by it (a unique violation on job_dedupe_live_v3).
-- It is replaced within this transaction, so no moment lacks it.
alter index jobs.job_dedupe_live_v3 rename to job_dedupe_live_0010;
create unique index job_dedupe_live_v3 on jobs.job
    (name, (coalesce(tenant, '')), idempotency_key text_pattern_ops)
    where state in ('ready','delayed','running','suspended','parked');
drop index jobs.job_dedupe_live_0010;
drop index jobs.job_live_list;
-- The lists filter live rows by tenant through the index's coalesce(tenant, '') and the column
-- together: without statistics on the pair the planner multiplied the two selectivities (and
-- took the expression's as a default), so a tenant holding most live rows looked like a few
-- and its page sorted every one of them instead of walking the primary key newest first.
create statistics jobs.job_tenant_mcv (mcv) on tenant, (coalesce(tenant, '')) from jobs.job;

create index job_live_queue_state on jobs.job (queue, state, id desc)
    include (run_at, updated_at, waiting_since) where state <> 'running';
drop index jobs.job_list_queue_state;
drop index jobs.job_waiting_v2;
