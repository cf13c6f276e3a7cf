-- 0015: where a pass's current run began, so its rate and ETA are read over that run. A pass
-- continued after a failure, a cancel or a worker's death (`jobsctl backfill NAME --retry`) read its
-- batches a second from its first start, hours before: 0.0 batches/s and an ETA of hours for a
-- pass with a minute left. Each begin of a pass stamps resumed_at and the rows swept until then.
-- Without downtime: two catalog-only columns; a row begun by the previous release reads its
-- rate from started_at and 0 rows, as before.
alter table jobs.backfill add column resumed_at timestamptz;
alter table jobs.backfill add column resumed_swept bigint not null default 0;
