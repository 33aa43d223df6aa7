#!/usr/bin/env bash
# The two roles of an lpstudy database, from environment variables:
#
#   LPSTUDY_WRITER_USER / LPSTUDY_WRITER_PASSWORD   workers: create Optuna's tables and the metrics
#                                                   table, read and write them
#   LPSTUDY_READER_USER / LPSTUDY_READER_PASSWORD   dashboards: SELECT on every table, now and later
#                                                   (default privileges for the writer's tables),
#                                                   refused on any write
#
# The official postgres image runs it once, on an empty data directory, from
# /docker-entrypoint-initdb.d (executed, or sourced if it lost its executable bit), connected as
# POSTGRES_USER to POSTGRES_DB over the local socket. It is idempotent: run it again to apply new
# passwords (`docker compose exec db /docker-entrypoint-initdb.d/10-lpstudy-roles.sh`) or on any
# server with psql's usual variables (PGHOST, PGPORT, PGPASSWORD) set, as a superuser.

lpstudy_create_roles() (
  set -euo pipefail
  : "${LPSTUDY_WRITER_USER:?set LPSTUDY_WRITER_USER (the workers role) in .env}"
  : "${LPSTUDY_WRITER_PASSWORD:?set LPSTUDY_WRITER_PASSWORD in .env}"
  : "${LPSTUDY_READER_USER:?set LPSTUDY_READER_USER (the dashboards role) in .env}"
  : "${LPSTUDY_READER_PASSWORD:?set LPSTUDY_READER_PASSWORD in .env}"
  if [ "$LPSTUDY_WRITER_USER" = "$LPSTUDY_READER_USER" ]; then
    echo "10-lpstudy-roles: LPSTUDY_WRITER_USER and LPSTUDY_READER_USER must differ" >&2
    exit 1
  fi

  # psql fills in :"name" (an identifier) and :'name' (a literal); the heredoc is quoted, so the
  # shell leaves them alone and no password ever appears on a command line.
  psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet \
    --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" \
    -v writer="$LPSTUDY_WRITER_USER" -v writer_password="$LPSTUDY_WRITER_PASSWORD" \
    -v reader="$LPSTUDY_READER_USER" -v reader_password="$LPSTUDY_READER_PASSWORD" <<'EOSQL'
-- Roles are cluster-wide: create them once, then (re)apply their attributes and passwords.
SELECT format('CREATE ROLE %I', :'writer')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'writer') \gexec
SELECT format('CREATE ROLE %I', :'reader')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'reader') \gexec
ALTER ROLE :"writer" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'writer_password';
ALTER ROLE :"reader" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'reader_password';
-- Its sessions start read-only; the grants below are what actually refuses its writes (a session
-- can turn its read-only default off).
ALTER ROLE :"reader" SET default_transaction_read_only = on;

-- Large objects are the one thing any role may create by default, and no quota bounds them: only
-- a superuser may use them here (Optuna and lpstudy never do). Functions live per database, so
-- this holds in this database, the only one the two roles can connect to.
SELECT format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', p.oid::regprocedure)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'pg_catalog'
   AND p.proname IN ('lo_create', 'lo_creat', 'lo_from_bytea', 'lo_import', 'lo_export', 'lo_put',
                     'lowrite', 'lo_truncate', 'lo_truncate64', 'lo_unlink', 'lo_open') \gexec

-- No role but a superuser connects to the maintenance databases: the two roles reach only this one.
REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC;
REVOKE CONNECT, TEMPORARY ON DATABASE template1 FROM PUBLIC;

-- This database: only these two roles connect; only the writer creates anything.
REVOKE ALL ON DATABASE :"DBNAME" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"DBNAME" TO :"writer";
GRANT CONNECT ON DATABASE :"DBNAME" TO :"reader";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO :"writer";
GRANT USAGE ON SCHEMA public TO :"reader";

-- The reader sees what exists now (e.g. after a restore) and everything the writer creates later.
GRANT SELECT ON ALL TABLES IN SCHEMA public TO :"reader";
GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO :"reader";
ALTER DEFAULT PRIVILEGES FOR ROLE :"writer" IN SCHEMA public GRANT SELECT ON TABLES TO :"reader";
ALTER DEFAULT PRIVILEGES FOR ROLE :"writer" IN SCHEMA public GRANT SELECT ON SEQUENCES TO :"reader";
EOSQL
  echo "10-lpstudy-roles: writer role ${LPSTUDY_WRITER_USER}, read-only role ${LPSTUDY_READER_USER}"
)

lpstudy_create_roles
