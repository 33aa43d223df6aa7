#!/usr/bin/env bash
# The two roles of an lpstudy database, from environment variables:
#
#   LPSTUDY_WRITER_USER / LPSTUDY_WRITER_PASSWORD   workers: create Optuna's tables and the metrics
#                                                   table, read and write them
#   LPSTUDY_READER_USER / LPSTUDY_READER_PASSWORD   dashboards: SELECT on every table, now and later
#                                                   (default privileges for the writer's tables),
#                                                   refused on any write
#
# A password may come from a file instead: LPSTUDY_WRITER_PASSWORD_FILE, LPSTUDY_READER_PASSWORD_FILE
# (docker compose's secrets). No password reaches a command line or the server: the script computes
# each role's SCRAM-SHA-256 verifier itself, as psql's \password does (with perl's core Digest::SHA,
# which the postgres image carries), and sends ALTER ROLE ... PASSWORD 'SCRAM-SHA-256$...' on psql's
# standard input. A server that logs DDL (log_statement, as managed services do) records the
# verifier, never the password. Passwords are printable ASCII without spaces (openssl rand -hex 24),
# which PostgreSQL's SASLprep leaves as they are.
#
# The official postgres image runs it once, on an empty data directory, from
# /docker-entrypoint-initdb.d (executed, or sourced if it lost its executable bit), connected as
# POSTGRES_USER to POSTGRES_DB over the local socket. It is idempotent: run it again to apply new
# passwords (`docker compose exec db /docker-entrypoint-initdb.d/10-lpstudy-roles.sh`) or on any
# server with psql's usual variables (PGHOST, PGPORT, PGPASSWORD) set, as a superuser.

lpstudy_create_roles() (
  set -euo pipefail

  # The password in NAME, or the first line of the file NAME_FILE names.
  password_of() {
    local file_var="${1}_FILE"
    if [ -n "${!file_var:-}" ]; then
      if [ ! -r "${!file_var}" ]; then
        echo "10-lpstudy-roles: ${file_var}=${!file_var} cannot be read" >&2
        return 1
      fi
      head -n 1 "${!file_var}" | tr -d '\r\n'
    else
      printf '%s' "${!1:-}"
    fi
  }

  # The SCRAM-SHA-256 verifier of $SCRAM_PASSWORD (RFC 5802 and 7677) as PostgreSQL stores it:
  # SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>, base64. The password reaches perl in
  # its environment, never in its arguments.
  scram_verifier() {
    # shellcheck disable=SC2016  # perl's variables, not the shell's
    perl -MDigest::SHA=hmac_sha256,sha256 -MMIME::Base64=encode_base64 -e '
      my $password = $ENV{SCRAM_PASSWORD};
      my $iterations = 4096;   # the server default (scram_iterations)
      open(my $random, "<:raw", "/dev/urandom") or die "10-lpstudy-roles: no /dev/urandom\n";
      read($random, my $salt, 16) == 16 or die "10-lpstudy-roles: short read of /dev/urandom\n";
      my $block = hmac_sha256($salt . pack("N", 1), $password);   # PBKDF2-HMAC-SHA-256, one block
      my $salted = $block;
      for (2 .. $iterations) { $block = hmac_sha256($block, $password); $salted ^= $block; }
      my $stored_key = sha256(hmac_sha256("Client Key", $salted));
      my $server_key = hmac_sha256("Server Key", $salted);
      printf "SCRAM-SHA-256\$%d:%s\$%s:%s", $iterations, map { encode_base64($_, "") } $salt, $stored_key, $server_key;'
  }

  : "${LPSTUDY_WRITER_USER:?set LPSTUDY_WRITER_USER (the workers role) in .env}"
  : "${LPSTUDY_READER_USER:?set LPSTUDY_READER_USER (the dashboards role) in .env}"
  if [ "$LPSTUDY_WRITER_USER" = "$LPSTUDY_READER_USER" ]; then
    echo "10-lpstudy-roles: LPSTUDY_WRITER_USER and LPSTUDY_READER_USER must differ" >&2
    exit 1
  fi
  declare -A verifier
  for role in WRITER READER; do
    password="$(password_of "LPSTUDY_${role}_PASSWORD")"
    if [ -z "$password" ]; then
      echo "10-lpstudy-roles: set LPSTUDY_${role}_PASSWORD (or LPSTUDY_${role}_PASSWORD_FILE)" >&2
      exit 1
    fi
    if ! LC_ALL=C grep -q '^[[:graph:]]*$' <<< "$password"; then
      echo "10-lpstudy-roles: LPSTUDY_${role}_PASSWORD must be printable ASCII without spaces" \
           "(openssl rand -hex 24)" >&2
      exit 1
    fi
    verifier[$role]="$(SCRAM_PASSWORD="$password" scram_verifier)"
  done
  unset password

  # psql fills in :"name" (an identifier) and :'name' (a literal). The verifiers reach it on its
  # standard input (printf is the shell's own: no process, no argv), the role names as options;
  # the heredoc is quoted, so the shell leaves the SQL alone.
  {
    printf "\\\\set writer_verifier '%s'\\n" "${verifier[WRITER]}"   # quoted: psql reads no :name in it
    printf "\\\\set reader_verifier '%s'\\n" "${verifier[READER]}"
    cat <<'EOSQL'
-- Roles are cluster-wide: create them once, then (re)apply their attributes and passwords.
SELECT format('CREATE ROLE %I', :'writer')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'writer') \gexec
SELECT format('CREATE ROLE %I', :'reader')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'reader') \gexec
ALTER ROLE :"writer" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'writer_verifier';
ALTER ROLE :"reader" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'reader_verifier';
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
  } | psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet \
      --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" \
      -v writer="$LPSTUDY_WRITER_USER" -v reader="$LPSTUDY_READER_USER"
  echo "10-lpstudy-roles: writer role ${LPSTUDY_WRITER_USER}, read-only role ${LPSTUDY_READER_USER}"
)

lpstudy_create_roles
