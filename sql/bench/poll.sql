-- Finish lines and bookkeeping for the bench harness (bench only).

-- name: ours_remaining :one
-- Whether any job of a queue is unsettled (1) or none is (0). The harness polls this every 10 ms
-- while the workers run, so it must cost next to nothing: `exists` stops at the first row, where
-- a count of the backlog took ~7 ms a call and ate ~40% of a core during a 20,000-job drain.
select (exists (select 1 from jobs.job
                where queue = %(queue)s and state in ('ready','delayed','parked','suspended'))
        or exists (select 1 from jobs.job where state = 'running'))::int as n;

-- name: ours_completed :one
-- Completed jobs of a queue (a sanity check after a drain: nothing lost, nothing dead).
select count(*) as n from jobs.job where queue = %(queue)s and state = 'completed';

-- name: peer_remaining :one
-- Whether pgqueuer's queue table holds a job (it deletes a job when it completes): 1 or 0.
select exists (select 1 from pgqueuer)::int as n;
