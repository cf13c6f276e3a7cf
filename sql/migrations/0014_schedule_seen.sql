-- 0014: when a scheduler process last declared each task (engine.schedule.RETIRED_AFTER). Every
-- scheduler process stamps the tasks it knows once a minute; the leader enqueues no occurrence of
-- a task none has stamped for ten minutes (a task removed from the code: retired), and one that is
-- declared again resumes, its missed occurrences under its catch-up.
-- Without downtime: a column with a stable default is a catalog change (every existing task
-- counts as seen now); a process of the previous release never stamps, so a fleet mid-upgrade
-- keeps every task its new processes know.
alter table jobs.schedule_state add column seen_at timestamptz not null default now();
