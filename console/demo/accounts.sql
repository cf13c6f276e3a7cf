-- The demo application's own table, in its own schema of the demo's database: the accounts its
-- two backfills sweep (console/demo/accounts.py loads these statements by name). A migration
-- added email_lower and plan_tier; the backfills fill them.

-- name: accounts_create
drop schema if exists demo_app cascade;
create schema demo_app;
create table demo_app.accounts (
    id bigint primary key,
    email text not null,
    email_lower text,
    plan text not null,
    plan_tier int
);
create table demo_app.migrations (name text primary key);
insert into demo_app.migrations values ('0001_accounts'), ('0002_accounts_email_lower'), ('0003_accounts_plan_tier');

-- name: accounts_seed
insert into demo_app.accounts (id, email, plan)
select g, 'User' || g || '@Example.COM', (array['free', 'team', 'enterprise'])[1 + mod(g, 3)]
from generate_series(1, %(rows)s) g;

-- name: migrations_applied
select name from demo_app.migrations;

-- The keyset sources' predicates: each selects exactly what its count counts.
-- name: email_lower_pending
email_lower is null

-- name: email_lower_count
select count(*) from demo_app.accounts where email_lower is null;

-- name: email_lower_fill
update demo_app.accounts set email_lower = lower(email) where id = any(%(ids)s);

-- name: plan_tier_pending
plan_tier is null

-- name: plan_tier_count
select count(*) from demo_app.accounts where plan_tier is null;

-- name: plan_tier_fill
update demo_app.accounts
set plan_tier = case plan when 'free' then 0 when 'team' then 1 else 2 end
where id = any(%(ids)s);
