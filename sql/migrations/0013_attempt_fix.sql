-- 0013: what to do about each failed attempt, beside its message and traceback: the fix its error
-- named (a handler's JobsError(code, cause, fix), or the engine's own error), shown with the dead
-- letter to whoever reads it. Null when the error named none (any other exception).
-- Without downtime: a nullable column with no default is a catalog change; a worker of the
-- previous release writes attempts without it (null), read the same way.
alter table jobs.attempt add column fix text;
