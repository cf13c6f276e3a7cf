-- Finish lines and bookkeeping for the bench harness (bench only).

-- name: ours_remaining :one
-- Jobs of a queue not yet settled: both terms read small partial indexes (claim, running lease).
select (select count(*) from jobs.job
        where queue = %(queue)s and state in ('ready','delayed','parked','suspended'))
     + (select count(*) from jobs.job where state = 'running') as n;

-- name: ours_completed :one
-- Completed jobs of a queue (a sanity check after a drain: nothing lost, nothing dead).
select count(*) as n from jobs.job where queue = %(queue)s and state = 'completed';

-- name: peer_remaining :one
-- pgqueuer deletes a job from its queue table when it completes.
select count(*) as n from pgqueuer;
