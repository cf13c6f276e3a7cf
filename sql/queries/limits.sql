-- Fleet-wide limits: per-job concurrency slots (jobs.slot) and token buckets (jobs.rate_bucket).
-- A slot is a row held by a job under a lease, so two worker processes share one limit.

-- name: slot_seed :exec
-- Make sure the slot rows 0..limit-1 of a key exist (re-runnable; never shrinks a key).
insert into jobs.slot (key, slot)
select %(key)s, s from generate_series(0, %(limit)s - 1) as g(s)
on conflict (key, slot) do nothing;

-- name: slot_acquire :one
-- Take one free slot below the limit (free: never held, or its holder's lease lapsed).
with free as (
    select key, slot from jobs.slot
    where key = %(key)s and slot < %(limit)s
      and (job_id is null or lease_until < %(now)s or job_id = %(job_id)s)
    order by slot
    limit 1
    for update skip locked
)
update jobs.slot s
set job_id = %(job_id)s, worker = %(worker)s,
    lease_until = %(now)s + %(lease_seconds)s * interval '1 second'
from free
where s.key = free.key and s.slot = free.slot
returning s.slot;

-- name: slot_release :exec
-- Free a slot, fenced on the job holding it.
update jobs.slot
set job_id = null, worker = null, lease_until = null
where key = %(key)s and slot = %(slot)s and job_id = %(job_id)s;

-- name: slot_renew_many :many
-- Extend the slot leases this worker holds for these jobs (renewed with the job leases); answer
-- the jobs whose slot was renewed. A job missing from the answer lost its slot to another holder.
update jobs.slot
set lease_until = %(now)s + %(lease_seconds)s * interval '1 second'
where worker = %(worker)s and job_id = any(%(job_ids)s::uuid[])
returning job_id;

-- name: rate_take :many
-- Take one token from a bucket of %(limit)s per %(per)s seconds; answer taken and, if not, the
-- wait until a token refills. A new key starts full (and this call takes one of its tokens).
with seed as (
    insert into jobs.rate_bucket (key, tokens, refilled_at)
    values (%(key)s, %(limit)s - 1, %(now)s)
    on conflict (key) do nothing
    returning true as taken, 0.0::float8 as wait
), upd as (
    update jobs.rate_bucket b
    set tokens = case when r.avail >= 1 then r.avail - 1 else r.avail end,
        refilled_at = greatest(b.refilled_at, %(now)s)
    from (
        select key,
               least(%(limit)s::float8, tokens + greatest(0, extract(epoch from (%(now)s - refilled_at)))
                     * %(limit)s / %(per)s) as avail
        from jobs.rate_bucket
        where key = %(key)s
        for update
    ) r
    where b.key = r.key
    returning r.avail >= 1 as taken,
              case when r.avail >= 1 then 0.0 else (1 - r.avail) * %(per)s / %(limit)s end::float8 as wait
)
select taken, wait from seed
union all
select taken, wait from upd;
