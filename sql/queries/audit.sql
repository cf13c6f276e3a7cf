-- The audit log (0022_audit_log.sql): one row per operator action that changed something, written
-- in the transaction of its change; read newest first; pruned past its retention.

-- name: audit_add :exec
insert into jobs.audit_log (at, actor, action, target, tenant, note, detail)
values (%(at)s, %(actor)s, %(action)s, %(target)s, %(tenant)s, %(note)s, %(detail)s::jsonb);

-- name: audit_list :many
-- Newest first, below the id ``before`` (a page's cursor), each filter optional; a tenant-scoped
-- reader sees only its tenant's entries (``scope``), never the fleet's.
select id, at, actor, action, target, tenant, note, detail
from jobs.audit_log
where (%(before)s::bigint is null or id < %(before)s::bigint)
  and (%(target)s::text is null or target = %(target)s::text)
  and (%(actor)s::text is null or actor = %(actor)s::text)
  and (%(action)s::text is null or action = %(action)s::text)
  and (%(since)s::timestamptz is null or at >= %(since)s::timestamptz)
  and (%(scope)s::text is null or tenant = %(scope)s::text)
order by id desc
limit %(limit)s;

-- name: audit_prune :one
-- At most ``limit`` entries older than ``cutoff``, oldest first: how many went.
with gone as (
    delete from jobs.audit_log
    where id in (select id from jobs.audit_log where at < %(cutoff)s order by at limit %(limit)s)
    returning 1
)
select count(*)::int as pruned from gone;
