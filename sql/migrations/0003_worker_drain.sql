-- 0003: an operator's request that a worker drain (jobsctl workers drain ID); the worker's next
-- heartbeat answers it and the worker stops claiming.
alter table jobs.worker
    add column drain_requested_by text,
    add column drain_requested_at timestamptz,
    add column drain_note text;
