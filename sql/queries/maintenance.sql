-- Maintenance under a leader lease (one leader per fleet, fenced by its term): the rescuer, the
-- pruner and the reaper of dead worker rows. Every statement takes %(now)s.

-- name: leader_acquire :one
-- Take or renew the named leader lease; the term grows on every change of holder. No row: held
-- by someone else whose lease has not lapsed.
insert into jobs.leader as l (name, holder, term, lease_until)
values (%(name)s, %(holder)s, 1, %(now)s + %(lease_seconds)s * interval '1 second')
on conflict (name) do update
set term = case when l.holder = excluded.holder then l.term else l.term + 1 end,
    holder = excluded.holder,
    lease_until = excluded.lease_until
where l.holder = excluded.holder or l.lease_until < %(now)s
returning term;

-- name: leader_release :exec
-- Give the lease up at once (fenced on holder and term) so another process can lead.
update jobs.leader
set lease_until = %(now)s - interval '1 millisecond'
where name = %(name)s and holder = %(holder)s and term = %(term)s;

-- fragment: lost_attempt
-- The attempt row of a run a rescuer takes back (`upd`: the rescued rows, with run, attempt,
-- claimed_by, claimed_at, last_error): recorded as 'lost'. A lost claim that resumed a suspended
-- run ends that run's attempt row instead (one run, one attempt row, as job_nack does).
resumed as (
    select distinct on (a.job_id) a.job_id, a.run, a.outcome, a.attempt
    from jobs.attempt a join upd on a.job_id = upd.id
    order by a.job_id, a.run desc
), carried as (
    update jobs.attempt a
    set run = upd.run, worker = coalesce(upd.claimed_by, '?'), finished_at = %(now)s, outcome = 'lost',
        error_code = 'X_LEASE_LOST', error = upd.last_error
    from upd, resumed
    where resumed.job_id = upd.id and resumed.outcome = 'suspended' and resumed.attempt = upd.attempt
      and a.job_id = resumed.job_id and a.run = resumed.run
    returning a.job_id
), rec as (
    insert into jobs.attempt (job_id, run, attempt, worker, started_at, finished_at, outcome, error_code, error)
    select id, run, attempt, coalesce(claimed_by, '?'), coalesce(claimed_at, %(now)s), %(now)s, 'lost', 'X_LEASE_LOST', last_error
    from upd where id not in (select job_id from carried)
    on conflict (job_id, run) do nothing
),

-- name: job_rescue :many
-- Return running rows whose lease lapsed to ready (dead when that was the last attempt): the
-- lost attempt stays burned, is recorded as 'lost', and the history says 'lease_lost'. Fenced on
-- the leader's term, in bounded batches: the longest lapsed first, ties by id, so a batch takes
-- the same rows on every run and on both drivers.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), lapsed as (
    select id from jobs.job
    where state = 'running' and lease_until < %(now)s and exists (select 1 from leader)
    order by lease_until, id
    limit %(limit)s
    for update skip locked
), again as (
    update only jobs.job j
    set state = 'ready', run_at = %(now)s, stop_reason = null, finished_at = null,
        last_error = 'X_LEASE_LOST: worker ' || coalesce(j.claimed_by, '?') || ' stopped renewing the lease of run ' || j.run,
        error_code = 'X_LEASE_LOST',
        lease_until = null, waiting_since = null, updated_at = %(now)s
    from lapsed
    where j.id = lapsed.id and j.attempt < j.max_attempts
    returning j.id, j.run, j.attempt, j.claimed_by, j.claimed_at, j.state, j.last_error, j.queue
), gone as (
    -- The lost attempt was the last: the row goes dead, into jobs.job_done.
    delete from only jobs.job j
    using lapsed
    where j.id = lapsed.id and j.attempt >= j.max_attempts
    returning j.*
), dead as (
    insert into jobs.job_done_now
        -- include: job_columns
    select id, name, queue, tenant, idempotency_key, input, result, 'dead', priority, attempt, max_attempts,
           run, run_at, created_at, %(now)s, claimed_by, claimed_at, null, %(now)s,
           'X_LEASE_LOST: worker ' || coalesce(claimed_by, '?') || ' stopped renewing the lease of run ' || run
           || ' [stop: attempts-exhausted at attempt ' || attempt || ' of ' || max_attempts || ']',
           'X_LEASE_LOST', 'attempts-exhausted', wait, null, trace
    from gone
    returning id, run, attempt, claimed_by, claimed_at, state, last_error, queue
), upd as (
    select * from again union all select * from dead
),
-- include: lost_attempt
hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'lease_lost', 'rescuer', null,
           jsonb_build_object('worker', claimed_by, 'run', run, 'attempt', attempt, 'to', state)
    from upd
)
-- A job made ready again wakes its queue's idle workers (one NOTIFY a queue: PostgreSQL folds
-- the same channel and payload within a transaction), delivered at commit.
select id, state, case when state = 'ready' then pg_notify('jobs_enqueue', queue) is null end as woke from upd;

-- fragment: past_retention
-- A settled row past its retention, for the leader only (`leader`): completed and cancelled
-- finished before %(before)s, dead letters before their own %(dead_before)s; the oldest first,
-- ties by id (the one order job_prune takes its batch in), in a bounded batch.
where exists (select 1 from leader)
  and ((state in ('completed','cancelled') and finished_at < %(before)s)
       or (state = 'dead' and finished_at < %(dead_before)s))
order by finished_at, id
limit %(limit)s
for update skip locked

-- name: job_prune :many
-- Delete finished rows past retention with their steps, attempts and history (no foreign key
-- cascades them: 0001_initial.sql says why), in a bounded batch, oldest first then by id (each
-- table's first %(limit)s in that order, then the first %(limit)s of them): from jobs.job_done
-- itself (rows settled before 0012_settled_buckets), its open bucket, and jobs.job (rows an older
-- release settled in place). A sealed bucket is dropped whole once all of it is past retention
-- (settled_drop), so none of its rows is deleted here. In the same pass, up to %(limit)s other
-- settled rows still in jobs.job move to the open bucket, as job_move_settled moves them.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), in_done as (
    select id, finished_at from only jobs.job_done
    -- include: past_retention
), in_open as (
    select id, finished_at from only jobs.job_done_now
    -- include: past_retention
), in_place as (
    select id, finished_at from only jobs.job
    -- include: past_retention
), doomed as (
    select id from (select * from in_done union all select * from in_open union all select * from in_place) d
    order by finished_at, id
    limit %(limit)s
), gone as (
    delete from jobs.job j
    using doomed
    where j.id = doomed.id
    returning j.id
), attempts as (
    delete from jobs.attempt where job_id in (select id from gone)
), steps as (
    delete from jobs.step where job_id in (select id from gone)
), history as (
    delete from jobs.history where job_id in (select id from gone)
), straggler as (
    select id from only jobs.job j
    where state in ('completed','dead','cancelled') and exists (select 1 from leader)
      and not exists (select 1 from doomed d where d.id = j.id)
    order by finished_at, id
    limit %(limit)s
    for update skip locked
), out as (
    delete from only jobs.job j using straggler s where j.id = s.id
    returning j.*
), moved as (
    insert into jobs.job_done_now select * from out
)
select id from gone;

-- name: job_move_settled :one
-- Move up to %(limit)s settled rows (completed, dead, cancelled) from jobs.job to jobs.job_done,
-- oldest first: what `jobsctl migrate` runs in batches after 0010_settled_rows, each batch its own
-- transaction, while workers run (rows another transaction holds are skipped and taken later).
with batch as (
    select id from only jobs.job
    where state in ('completed','dead','cancelled')
    order by finished_at
    limit %(limit)s
    for update skip locked
), out as (
    delete from only jobs.job j using batch b where j.id = b.id
    returning j.*
), moved as (
    insert into jobs.job_done select * from out
    returning 1
)
select count(*)::int as moved from moved;

-- name: worker_reap :many
-- Delete the rows of workers whose heartbeat stopped before %(before)s (killed processes).
delete from jobs.worker where heartbeat_at < %(before)s returning id;

-- name: throughput_rollup :one
-- Completions per (queue, calendar minute) into jobs.throughput_minute, with the minute's dead jobs
-- and its completions' wait and run percentiles (the queue chart), for every minute that
-- ended at least %(settle)s seconds before %(now)s and lies after the watermark (jobs.meta's
-- throughput_rolled_until), the last two hours at most; then the watermark moves to the end of the
-- last minute counted, and minutes older than two hours are dropped. The watermark row is locked
-- for the pass, so two passes never count a minute twice, and a pass with a clock behind the
-- watermark counts nothing. Fenced on the leader's term like the pruner. A completion whose
-- finished_at lands in a minute already rolled (recorded more than `settle` late) is in no minute.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), mark as (
    select value::timestamptz as since from jobs.meta
    where key = 'throughput_rolled_until' and exists (select 1 from leader)
    for update
), span as (
    select greatest(since, date_trunc('minute', %(now)s) - interval '2 hours') as lo,
           date_trunc('minute', %(now)s - make_interval(secs => %(settle)s)) as hi
    from mark
), counted as (
    insert into jobs.throughput_minute (minute, queue, completed, dead, wait_p50_ms, wait_p95_ms, run_p50_ms)
    select date_trunc('minute', j.finished_at), j.queue,
           count(*) filter (where j.state = 'completed'),
           count(*) filter (where j.state = 'dead'),
           percentile_disc(0.5) within group (order by (extract(epoch from j.claimed_at - j.run_at) * 1000)::int)
               filter (where j.state = 'completed'),
           percentile_disc(0.95) within group (order by (extract(epoch from j.claimed_at - j.run_at) * 1000)::int)
               filter (where j.state = 'completed'),
           percentile_disc(0.5) within group (order by (extract(epoch from j.finished_at - j.claimed_at) * 1000)::int)
               filter (where j.state = 'completed')
    from jobs.job j, span
    where j.state in ('completed', 'dead') and j.finished_at >= span.lo and j.finished_at < span.hi
    group by 1, 2
    returning 1
), moved as (
    update jobs.meta m set value = span.hi::text
    from span
    where m.key = 'throughput_rolled_until' and span.hi > span.lo
    returning 1
), dropped as (
    delete from jobs.throughput_minute
    where minute < date_trunc('minute', %(now)s) - interval '2 hours' and exists (select 1 from leader)
    returning 1
)
select (select count(*) from counted)::int as rows, (select count(*) from moved)::int as moved,
       (select count(*) from dropped)::int as dropped;

-- fragment: presence_gone
-- A worker whose presence lock was taken in this lifetime of the server and is no longer held.
-- Appended to a WHERE clause over jobs.worker w.
and w.presence_epoch = pg_postmaster_start_time()
and not exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted and l.objsubid = 2
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = %(namespace)s::oid and l.objid = w.presence_key::oid
)

-- name: worker_gone :many
-- The workers whose presence is gone now. A worker's own presence session may end and be taken
-- again within its interval (the server ended it; the worker reconnects): the caller re-delivers
-- the jobs of a worker only once it has been gone for a grace (engine/runtime/presence.py).
select w.id from jobs.worker w
where true
  -- include: presence_gone
order by w.id;

-- name: job_rescue_orphaned :many
-- Re-deliver the running jobs of the named workers that are still gone: a worker whose presence
-- lock was taken in this lifetime of the server and is no longer held (its session ended: the process was
-- killed, or it released its presence still holding claims). Any worker may run it; SKIP LOCKED
-- keeps two from taking one row. As job_rescue: the lost attempt stays burned (dead when it was
-- the last), is recorded as 'lost', and the history says 'lease_lost', here with why 'worker-gone'.
-- Once a pass took all their jobs (fewer than the limit), the gone workers' rows are deleted, so
-- the next pass, every worker's every presence_interval, finds nobody and reads no job row (the
-- `exists (select 1 from gone)` is a one-time filter). A worker alive after all (its session was
-- terminated) registers again at its next heartbeat and holds its presence again.
with gone as (
    select w.id from jobs.worker w
    where w.id = any(%(workers)s::text[])
      -- include: presence_gone
), orphaned as (
    select id from jobs.job
    where state = 'running' and claimed_by in (select id from gone) and exists (select 1 from gone)
    order by id
    limit %(limit)s
    for update skip locked
), again as (
    update only jobs.job j
    set state = 'ready', run_at = %(now)s, stop_reason = null, finished_at = null,
        last_error = 'X_LEASE_LOST: worker ' || coalesce(j.claimed_by, '?') || ' is gone (its database session ended) '
                     || 'during run ' || j.run,
        error_code = 'X_LEASE_LOST',
        lease_until = null, waiting_since = null, updated_at = %(now)s
    from orphaned
    where j.id = orphaned.id and j.attempt < j.max_attempts
    returning j.id, j.queue, j.run, j.attempt, j.claimed_by, j.claimed_at, j.state, j.last_error
), lost as (
    -- The lost attempt was the last: the row goes dead, into jobs.job_done.
    delete from only jobs.job j
    using orphaned
    where j.id = orphaned.id and j.attempt >= j.max_attempts
    returning j.*
), dead as (
    insert into jobs.job_done_now
        -- include: job_columns
    select id, name, queue, tenant, idempotency_key, input, result, 'dead', priority, attempt, max_attempts,
           run, run_at, created_at, %(now)s, claimed_by, claimed_at, null, %(now)s,
           'X_LEASE_LOST: worker ' || coalesce(claimed_by, '?') || ' is gone (its database session ended) '
           || 'during run ' || run || ' [stop: attempts-exhausted at attempt ' || attempt || ' of ' || max_attempts || ']',
           'X_LEASE_LOST', 'attempts-exhausted', wait, null, trace
    from lost
    returning id, queue, run, attempt, claimed_by, claimed_at, state, last_error
), upd as (
    select * from again union all select * from dead
),
-- include: lost_attempt
hist as (
    insert into jobs.history (job_id, at, kind, actor, note, data)
    select id, %(now)s, 'lease_lost', 'rescuer', null,
           jsonb_build_object('worker', claimed_by, 'run', run, 'attempt', attempt, 'to', state, 'why', 'worker-gone')
    from upd
), forgotten as (
    delete from jobs.worker w
    using gone
    where w.id = gone.id and (select count(*) from orphaned) < %(limit)s
)
-- A job made ready again wakes its queue's idle workers, as job_rescue's do (delivered at commit).
select id, state, queue, claimed_by, case when state = 'ready' then pg_notify('jobs_enqueue', queue) is null end as woke
from upd;

-- Index upkeep (engine/services/maintenance.py). A GIN index keeps an entry-tree key for every
-- distinct value it ever indexed: vacuum empties a key's posting list and never removes the key,
-- so inputs holding unique values (ids, timestamps) grow the GINs over `input` forever while the
-- heap and every btree stay flat. The leader rebuilds a grown one with REINDEX INDEX
-- CONCURRENTLY, on a connection of its own in autocommit (it cannot run in a transaction block),
-- and keeps each GIN's size after its last rebuild in jobs.meta (`index_baseline:<index>`).

-- name: index_sizes :many
-- The GIN indexes of jobs.job, jobs.job_done and its open bucket (found by access method, so a
-- GIN added later is covered; valid ones only: an interrupted rebuild's leftover is not one), each
-- with its size now and its baseline. A sealed bucket's GIN is dropped whole with its keys; the
-- open one is pruned row by row while the leader cannot seal it. An index seen for the first time
-- gets its size now as its baseline. Fenced on the leader's term: no rows for anyone else.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), gin as (
    select n.nspname || '.' || c.relname as index, pg_relation_size(c.oid) as bytes
    from pg_index i
    join pg_class c on c.oid = i.indexrelid
    join pg_namespace n on n.oid = c.relnamespace
    join pg_am a on a.oid = c.relam
    where i.indrelid in ('jobs.job'::regclass, 'jobs.job_done'::regclass, 'jobs.job_done_now'::regclass)
      and a.amname = 'gin' and i.indisvalid and exists (select 1 from leader)
), seen as (
    insert into jobs.meta (key, value)
    select 'index_baseline:' || index, bytes::text from gin
    on conflict (key) do nothing
    returning key, value
)
select g.index, g.bytes, coalesce(m.value, s.value)::bigint as baseline
from gin g
left join jobs.meta m on m.key = 'index_baseline:' || g.index
left join seen s on s.key = 'index_baseline:' || g.index
order by g.index;

-- name: upkeep_session :exec
-- A rebuild's, a vacuum's or a bucket's seal or drop's own session runs without a statement
-- timeout: a REINDEX of a big index takes minutes (one cut off leaves an invalid copy behind), and
-- so may a VACUUM of a bloated table or the drop of a big bucket with its jobs' steps. So does a
-- migration's session unless the command was given one (an index build over a big table).
set statement_timeout = 0;

-- name: index_rebuild_lock :one
-- One rebuild at a time fleet-wide, whoever leads: a session lock on the rebuild's connection,
-- freed when the rebuild is over (index_rebuild_unlock), or else when the session ends (a killed
-- process's included). Its own first key, apart from the workers' presence locks
-- (PRESENCE_NAMESPACE) and an app's one-bigint locks.
select pg_try_advisory_lock(%(namespace)s, 1) as held;

-- name: index_rebuild_unlock :exec
-- The rebuild lock freed once the rebuild is over (an error's path leaves it to the close).
select pg_advisory_unlock(%(namespace)s, 1);

-- name: index_leftovers :many
-- What an interrupted REINDEX CONCURRENTLY leaves: an invalid index of jobs.job or jobs.job_done
-- named <index>_ccnew (or _ccnew1, ...). Only read under the rebuild lock, so never the copy of a
-- rebuild of ours still under way.
select n.nspname as schema, c.relname as name
from pg_index i
join pg_class c on c.oid = i.indexrelid
join pg_namespace n on n.oid = c.relnamespace
where i.indrelid in ('jobs.job'::regclass, 'jobs.job_done'::regclass, 'jobs.job_done_now'::regclass)
  and not i.indisvalid and c.relname ~ '_ccnew[0-9]*$'
order by c.relname;

-- name: index_leftover_drop :exec
-- Drop one leftover ({index}: an identifier, composed by the driver with psycopg.sql).
drop index concurrently if exists {index};

-- name: index_leader_holds :one
-- The leader still holds its term: checked right before a rebuild starts.
select exists (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
) as holds;

-- name: index_rebuild :exec
-- Rebuild one index without blocking writes ({index}: an identifier, composed by the driver).
reindex index concurrently {index};

-- name: index_baseline_reset :one
-- The index's size after its rebuild, stored as its new baseline unless another holder took
-- the lease meanwhile (its term moved on: a rebuild takes longer than a lease, so the lease's
-- end is not checked here). Not stored, the next check finds the index small against the old one.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s
), size as (
    select pg_relation_size(%(index)s::regclass) as bytes
), stored as (
    insert into jobs.meta (key, value)
    select 'index_baseline:' || %(index)s, bytes::text from size where exists (select 1 from leader)
    on conflict (key) do update set value = excluded.value
    returning 1
)
select bytes, exists (select 1 from stored) as stored from size;

-- Table upkeep (engine/services/maintenance.py). Every job leaves two dead row versions in
-- jobs.job (its claim's update, its ack's delete), thousands a second under load, and autovacuum
-- visits a database once a minute (autovacuum_naptime) at a throttled pace: the table and its
-- indexes grow to hundreds of MB for a few thousand live rows and every claim steps over the
-- dead entries. The leader reads the statistics each pass and vacuums a table past its threshold
-- (a plain VACUUM: it never blocks enqueues, claims or acks).

-- name: table_rows :many
-- The tables of the jobs schema with their live and dead row versions (the cumulative
-- statistics, a second or so behind), whether this role owns them (VACUUM skips, with a warning,
-- a table its role does not own), and whether a transaction older than the table's last vacuum
-- is still open (`held`): every version that died since then is visible to it, so a vacuum now
-- would scan the table and remove nothing (a session idle in transaction, a long report). The
-- horizon is this database's sessions holding an xid or a snapshot, and its prepared
-- transactions. Fenced on the leader's term: no rows for anyone else.
with leader as (
    select 1 from jobs.leader
    where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s
), horizon as (
    select min(since) as oldest from (
        select xact_start as since from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and (backend_xid is not null or backend_xmin is not null)
        union all
        select prepared from pg_prepared_xacts where database = current_database()
    ) tx
)
select s.schemaname || '.' || s.relname as name, s.n_live_tup as live, s.n_dead_tup as dead,
       pg_has_role(c.relowner, 'USAGE') as owned,
       coalesce(h.oldest < greatest(s.last_vacuum, s.last_autovacuum), false) as held
from pg_stat_user_tables s
join pg_class c on c.oid = s.relid
cross join horizon h
where s.schemaname = 'jobs' and exists (select 1 from leader)
order by s.relname;

-- name: table_vacuum :exec
-- Vacuum one table ({table}: an identifier, composed by the driver), skipped at once when another
-- vacuum (autovacuum's) holds it. Outside a transaction block, on a connection of its own. No
-- truncation: giving empty pages at the table's end back takes an ACCESS EXCLUSIVE lock that
-- stops every claim and ack while it lasts, and the next enqueues would fill them again.
vacuum (skip_locked, truncate false) {table};

-- name: settled_buckets :many
-- The buckets of settled rows (0012_settled_buckets.sql), oldest first, the open one last; none
-- unless the caller holds the leader's term.
select b.n, b.opened_at, b.sealed_at
from jobs.job_done_bucket b
where exists (select 1 from jobs.leader
              where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s)
order by b.n;

-- name: settled_seal :one
-- Seal the open bucket and open the next (jobs.job_done_seal), fenced on the leader's term: no
-- row when the caller does not hold it.
select jobs.job_done_seal(%(now)s, %(lock_timeout)s) as sealed
from jobs.leader
where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s;

-- name: settled_drop :one
-- Drop a sealed bucket past retention (jobs.job_done_drop: null when a row is not yet), fenced
-- on the leader's term: no row when the caller does not hold it.
select jobs.job_done_drop(%(bucket)s, %(before)s, %(dead_before)s, %(lock_timeout)s) as dropped
from jobs.leader
where name = %(leader)s and holder = %(holder)s and term = %(term)s and lease_until >= %(now)s;
