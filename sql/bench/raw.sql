-- The limit: the job life cycle in raw SQL, no Python engine (bench only, never installed by
-- `jobsctl install`). A minimal durable queue: a lease stamped by the claim, a fenced ack.

-- name: raw_install :exec
-- The bench's own table: one partial index for the claim, nothing else to maintain.
create schema if not exists bench;
create table if not exists bench.raw_job (
    id          bigint generated always as identity primary key,
    payload     jsonb not null,
    state       text not null default 'ready',
    run         integer not null default 0,
    run_at      timestamptz not null default now(),
    claimed_by  text,
    lease_until timestamptz,
    finished_at timestamptz
);
create index if not exists raw_job_claim on bench.raw_job (run_at, id) where state = 'ready';

-- name: raw_insert_one :exec
-- Insert one job.
insert into bench.raw_job (payload) values (%(payload)s::jsonb);

-- name: raw_insert_many :exec
-- Insert a batch in one statement.
insert into bench.raw_job (payload) select p::jsonb from unnest(%(payloads)s::text[]) as t(p);

-- name: raw_claim :many
-- Lease up to %(limit)s due rows (SKIP LOCKED), stamping the claimant and the lease.
with picked as (
    select id from bench.raw_job
    where state = 'ready' and run_at <= now()
    order by run_at, id
    limit %(limit)s
    for update skip locked
)
update bench.raw_job j
set state = 'running', run = j.run + 1, claimed_by = %(worker)s,
    lease_until = now() + interval '30 seconds'
from picked where j.id = picked.id
returning j.id, j.run, j.payload;

-- name: raw_ack_many :exec
-- Complete a batch of claims, fenced per row on (claimant, run).
update bench.raw_job j
set state = 'completed', finished_at = now(), lease_until = null
from unnest(%(ids)s::bigint[], %(runs)s::int[]) as a(id, run)
where j.id = a.id and j.state = 'running' and j.claimed_by = %(worker)s and j.run = a.run;

-- name: raw_remaining :one
-- Whether a job is not yet completed (1) or all are (0): the drain's finish line, as cheap as
-- the other systems' (an `exists` stops at the first row).
select exists (select 1 from bench.raw_job where state <> 'completed')::int as n;
