-- The limit as pgbench scripts (C client, no Python at all) over bench.raw_job (raw.sql).
-- Each statement is one pgbench transaction script; :batch is set with `pgbench -D batch=N`.
-- The claim hands its ids to the ack through \gset, as a client would.

-- name: pgb_insert :exec
-- Enqueue: insert :batch jobs in one statement.
insert into bench.raw_job (payload) select jsonb_build_object('i', g) from generate_series(1, :batch) g;

-- name: pgb_lifecycle :exec
-- The life cycle: insert :batch, claim :batch with SKIP LOCKED (stamping the lease), fenced ack.
insert into bench.raw_job (payload) select jsonb_build_object('i', g) from generate_series(1, :batch) g;
with picked as (
    select id from bench.raw_job
    where state = 'ready' and run_at <= now()
    order by run_at, id limit :batch
    for update skip locked
), c as (
    update bench.raw_job j
    set state = 'running', run = j.run + 1, claimed_by = 'pgbench', lease_until = now() + interval '30 seconds'
    from picked where j.id = picked.id
    returning j.id, j.run
)
select coalesce(array_agg(id), '{}') as ids, coalesce(array_agg(run), '{}') as runs from c \gset
update bench.raw_job j
set state = 'completed', finished_at = now(), lease_until = null
from unnest(:ids::bigint[], :runs::int[]) as a(id, run)
where j.id = a.id and j.state = 'running' and j.claimed_by = 'pgbench' and j.run = a.run;
