-- 0002: the traceback of each failed attempt, beside its message (jobs.attempt.error). Bounded by
-- the worker before it is written (traceback_limit): the tail is kept, marked where it was cut.
alter table jobs.attempt add column traceback text;
