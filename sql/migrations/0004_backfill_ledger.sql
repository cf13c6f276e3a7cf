-- 0004: the backfill ledger as passes write it: one row per pass (a forced rerun adds a row and
-- never edits a completed one), queued -> running -> completed | failed | stalled | cancelled.
alter table jobs.backfill
    add column dry_run boolean not null default true,
    add column app_version text,
    add column actor text,
    add column finished_at timestamptz,
    add column planned bigint,
    add column batches bigint not null default 0,
    drop column completed_at;
alter table jobs.backfill drop constraint backfill_status_check;
alter table jobs.backfill add constraint backfill_status_check
    check (status in ('queued','running','completed','failed','stalled','cancelled'));
-- A backfill's history per environment, newest first; `applied` reads its completed write passes.
-- (drop column completed_at dropped backfill_name_env with it.)
create index backfill_ledger on jobs.backfill (name, environment, started_at desc);
