-- The two group roles README.md ("Database roles") tells an operator to create, run once by the
-- owner of the jobs schema (the role that runs `jobsctl migrate`). tests/engine/test_roles.py runs
-- exactly this file, so the README's grants are the ones the tests prove.
create role jobs_reader nologin;
grant usage on schema jobs to jobs_reader;
grant select on all tables in schema jobs to jobs_reader;
create role jobs_writer nologin;
grant jobs_reader to jobs_writer;
grant insert, update, delete on all tables in schema jobs to jobs_writer;
grant usage on all sequences in schema jobs to jobs_writer;
-- The maintenance leader's seal and drop of the buckets of settled rows (0012_settled_buckets.sql).
grant execute on all functions in schema jobs to jobs_writer;
-- Tables and sequences a later `jobsctl migrate` adds get the same grants.
alter default privileges in schema jobs grant select on tables to jobs_reader;
alter default privileges in schema jobs grant insert, update, delete on tables to jobs_writer;
alter default privileges in schema jobs grant usage on sequences to jobs_writer;
alter default privileges in schema jobs grant execute on functions to jobs_writer;
