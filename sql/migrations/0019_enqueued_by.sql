-- 0019: which job enqueued a job. A fan-out (ctx.step.enqueue) stores the ids it enqueued as its
-- step's result (a JSON array of strings) and writes nothing on the jobs themselves; a job's
-- detail and `jobsctl show` name the job and step that enqueued it (an on-call engineer following a
-- tree up). This GIN over the results of enqueue steps only answers "who enqueued this id" with
-- one probe (jsonb `?`): no run, sleep or wait step enters it, and no enqueue, claim or ack of
-- jobs.job writes it.
--
-- Without downtime: the build reads jobs.step under a SHARE lock, so step writes wait for that
-- scan; the index itself holds only the enqueue steps, none before this release.
create index step_enqueued on jobs.step using gin (result) where kind = 'enqueue';
