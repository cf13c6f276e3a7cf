-- 0005: the outbox relay's lease. A relay claims rows under a lease (claim_token, lease_until) in
-- (staged_at, id) order (I17), publishes them through the enqueue path, then marks them published,
-- fenced on that token (I18). Published rows stay as the audit trail until the maintenance leader
-- prunes them (outbox_retention). The table shipped unused before this; no row is moved.
alter table jobs.outbox
    add column claim_token uuid,               -- one per claim: what every later mutation fences on
    add column lease_until timestamptz,        -- claimable again by anyone once this has passed
    add column attempts integer not null default 0,  -- publishes of this row that failed
    add column failed_at timestamptz;
-- The pruner's oldest-first batches and "published in the last hour".
create index outbox_published on jobs.outbox (published_at) where published_at is not null;

-- Relays alive: each relay stamps its row every few seconds, so "why is this row not published"
-- can answer "no relay is running" instead of leaving the operator to guess.
create table jobs.outbox_relay (
    id           text primary key,
    started_at   timestamptz not null,
    heartbeat_at timestamptz not null
);
