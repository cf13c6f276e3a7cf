-- The index-cost bench's own statements (bench/indexcost.py, bench only).

-- name: ack_in_place :many
-- The ack before 0010_settled_rows: the row stays in jobs.job, updated in place (every list index
-- the completed version matches gets an entry), fenced as job_ack_many is. What the "0009: one
-- table" variant runs.
update jobs.job j
set state = 'completed',
    result = %(fence)s::jsonb -> (j.id::text) -> 1,
    finished_at = %(now)s, updated_at = %(now)s, lease_until = null, wait = null, waiting_since = null
where j.id = any(%(ids)s::uuid[]) and j.state = 'running'
  and j.claimed_by = %(worker)s
  and j.run = (%(fence)s::jsonb -> (j.id::text) ->> 0)::int
returning j.id::text;
