-- 0021: the heartbeat interval a worker registered with. The workers view calls a worker stale
-- once it missed more than REAP_BEATS of its own heartbeats, or once its heartbeat is older than
-- the view's stale_after, whichever is later: a worker beating every 60 s no longer reads stale
-- between two beats. A row without it (a worker of the previous release) keeps stale_after alone.
--
-- Without downtime: a nullable column without a default is a change of the catalog only; no row
-- is rewritten, and a worker of the previous release registers as before (its rows hold null).
alter table jobs.worker add column heartbeat_interval double precision;
