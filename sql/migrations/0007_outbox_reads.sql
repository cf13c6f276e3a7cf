-- 0007: the outbox screen's reads at a large backlog. "Rows claimed" (outbox_holders) and "rows
-- failing" (outbox_failing) filtered the whole unpublished index: 151 ms and 137 ms at a million
-- unpublished rows (python -m bench.projections). Both sets are small, so each gets a partial
-- index of its own. A relay's one-statement pass stamps a row claimed and published together, so
-- it never enters outbox_claimed; the three-step pass adds one entry a row while it holds it.
create index outbox_claimed on jobs.outbox (lease_until) where published_at is null and claim_token is not null;
create index outbox_failing on jobs.outbox (staged_at, id) where published_at is null and attempts > 0;
