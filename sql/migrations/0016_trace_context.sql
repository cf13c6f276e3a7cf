-- 0016: the trace context of the code that enqueued or staged a job, so the run's span joins the
-- request's trace (engine/tracing.py): the propagator's carrier as a JSON object of strings
-- (W3C `traceparent`, and `tracestate` or baggage when the caller's context has them). Null
-- when the engine that wrote the row does not trace, so an engine without tracing writes one
-- null bit a row more. jobs.job's children (jobs.job_done and its buckets) take the column
-- with it; the moves between them name it in job_columns.
-- Without downtime: catalog-only columns; a worker of the previous release inserts and moves
-- rows without it (their runs start traces of their own).
alter table jobs.job add column trace jsonb;
alter table jobs.outbox add column trace jsonb;
