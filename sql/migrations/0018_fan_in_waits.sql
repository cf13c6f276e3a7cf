-- 0018: which fan-ins wait for a job. A job that a step's wait_for_jobs names does not know it is
-- waited for; its job detail and `jobsctl why` name the suspended jobs that wait for it (an on-call
-- engineer looking at a stuck job sees whose work it holds up). A suspended fan-in keeps the ids
-- it waits for in its wait (wait -> 'jobs', a JSON array of strings): this GIN over that array,
-- for suspended fan-ins only, answers "who waits for this id" with one probe (jsonb `?`).
-- Only a fan-in's suspension writes an entry: no ready, running or settled row matches the
-- predicate, so an enqueue, a claim and an ack write nothing to it, and jobs.job_done (a child
-- table: an index on jobs.job is not inherited) has none.
--
-- Without downtime: the build reads jobs.job (its live rows only, since 0010) under a SHARE lock,
-- so enqueues, claims and acks wait for that scan; the index itself holds only the suspended
-- fan-ins.
create index job_awaited on jobs.job using gin ((wait -> 'jobs'))
    where state = 'suspended' and wait ->> 'kind' = 'jobs';
