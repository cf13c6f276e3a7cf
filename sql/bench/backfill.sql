-- The backfill bench: an application table, and the plain keyset UPDATE loop a pass is measured
-- against (bench only, never installed by `jobsctl install`).

-- name: bf_table :exec
-- The application table: a column to fill, counted per row so a double update would show.
drop table if exists bench_accounts;
create table bench_accounts (id bigint primary key, email text not null, email_lower text,
                             hits int not null default 0);

-- name: bf_seed :exec
-- Fill it.
insert into bench_accounts (id, email) select g, 'User' || g || '@Example.COM' from generate_series(1, %(rows)s) g;

-- name: bf_reset :exec
-- Back to unswept (then vacuumed by the caller, so both sides start from the same table).
update bench_accounts set email_lower = null, hits = 0;

-- name: bf_plain_batch :one
-- One batch of the plain loop: the next rows after the cursor that still need the sweep, updated
-- in one statement; answers the batch's last key and its size.
with batch as (
    select id from bench_accounts where id > %(after)s and email_lower is null order by id limit %(size)s
), upd as (
    update bench_accounts a set email_lower = lower(a.email), hits = a.hits + 1
    from batch where a.id = batch.id
    returning a.id
)
select max(id) as last, count(*) as n from upd;

-- name: bf_fill :exec
-- The pass's handle: the batch's rows by key.
update bench_accounts set email_lower = lower(email), hits = hits + 1 where id = any(%(ids)s);

-- name: bf_unswept :one
-- count(): the rows that still need the sweep.
select count(*) as n from bench_accounts where email_lower is null;

-- name: bf_check :one
-- After a sweep: every row filled, none twice.
select count(*) filter (where email_lower is null) as missed, count(*) filter (where hits > 1) as twice
from bench_accounts;
