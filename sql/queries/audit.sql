-- The audit log (0022_audit_log.sql): one row per operator action that changed something, written
-- in the transaction of its change; read newest first; pruned past its retention.

-- name: audit_add :exec
insert into jobs.audit_log (at, actor, action, target, tenant, note, detail)
values (%(at)s, %(actor)s, %(action)s, %(target)s, %(tenant)s, %(note)s, %(detail)s::jsonb);

-- name: audit_list :many
-- Newest first (by time, then id: entries written under one clock read in the order they were
-- written), older than the entry ``before`` (a page's cursor: its last entry's id; an id pruned
-- since, by id alone), each filter optional; a tenant-scoped reader sees only its tenant's
-- entries (``scope``), never the fleet's.
with mark as (select at, id from jobs.audit_log where id = %(before)s::bigint)
select a.id, a.at, a.actor, a.action, a.target, a.tenant, a.note, a.detail
from jobs.audit_log a
where (%(before)s::bigint is null
       or (not exists (select 1 from mark) and a.id < %(before)s::bigint)
       or (a.at, a.id) < (select at, id from mark))
  and (%(target)s::text is null or a.target = %(target)s::text)
  and (%(actor)s::text is null or a.actor = %(actor)s::text)
  and (%(action)s::text is null or a.action = %(action)s::text)
  and (%(since)s::timestamptz is null or a.at >= %(since)s::timestamptz)
  and (%(scope)s::text is null or a.tenant = %(scope)s::text)
order by a.at desc, a.id desc
limit %(limit)s;

-- name: audit_prune :one
-- At most ``limit`` entries older than ``cutoff``, oldest first: how many went.
with gone as (
    delete from jobs.audit_log
    where id in (select id from jobs.audit_log where at < %(cutoff)s order by at limit %(limit)s)
    returning 1
)
select count(*)::int as pruned from gone;
