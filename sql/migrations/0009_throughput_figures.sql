-- 0009: the rollup keeps what a queue's chart shows besides its completions: the jobs that went
-- dead in the minute, and the latency of the minute's completions (wait: from when its last run
-- fell due to its claim; run: from that claim to the completion), as percentiles in milliseconds.
-- A minute rolled before this migration keeps 0 dead and no latency.
alter table jobs.throughput_minute
    add column dead        integer not null default 0,
    add column wait_p50_ms integer,
    add column wait_p95_ms integer,
    add column run_p50_ms  integer;
