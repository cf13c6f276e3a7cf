-- 0008: a worker's presence. Each worker holds a session-level advisory lock on a connection of
-- its own (key: (presence namespace, presence_key)); PostgreSQL frees it the moment that session
-- ends, a killed process's included, so the running jobs of a worker whose lock is gone are
-- re-delivered at once instead of after their lease. presence_epoch is the server's start time
-- when the lock was taken: a lock is only missed by the server it was taken on (after a restart
-- every lock is gone, and no worker is judged until it takes its lock again).
alter table jobs.worker
    add column presence_key integer,
    add column presence_epoch timestamptz;
