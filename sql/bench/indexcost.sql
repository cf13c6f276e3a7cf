-- The index-cost bench's own statements (bench/indexcost.py, bench only).

-- name: ack_in_place :many
-- The ack before 0010_settled_rows: the row stays in jobs.job, updated in place (every list index
-- the completed version matches gets an entry). What the "0009: one table" variant runs.
update jobs.job j
set state = 'completed',
    result = (%(results)b::text[])[array_position(%(ids)s::uuid[], j.id)]::jsonb,
    finished_at = %(now)s, updated_at = %(now)s, lease_until = null, wait = null, waiting_since = null
where j.id = any(%(ids)s::uuid[]) and j.state = 'running'
  and j.claimed_by = (%(workers)b::text[])[array_position(%(ids)s::uuid[], j.id)]
  and j.run = (%(runs)s::int[])[array_position(%(ids)s::uuid[], j.id)]
returning j.id::text;
