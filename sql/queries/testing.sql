-- Statements of engine.testing: throwaway databases for the suite and for users' own tests.

-- name: database_sessions_end :exec
-- End every session still connected to the database %(name)s (a template must have none).
select pg_terminate_backend(pid) from pg_stat_activity where datname = %(name)s;
