-- 0020: the steps that waited for jobs (ctx.step.wait_for_jobs), by job. A bulk retry's dry run
-- names the matched dead fan-ins whose stored wait answered a job not completed (a plain retry
-- replays that answer); read through jobs.step's primary key, that is one probe per matched dead
-- job, which at a million dead letters is past the dry run's budget. This partial index holds the
-- wait steps only: no run, sleep, event or enqueue step enters it, and nothing of jobs.job.
--
-- Without downtime: the build reads jobs.step under a SHARE lock, so step writes wait for that
-- scan; the index holds only the fan-ins' wait steps.
create index step_waits on jobs.step (job_id) where kind = 'jobs';
