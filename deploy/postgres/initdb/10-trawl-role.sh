#!/bin/sh
# trawl's own PostgreSQL role, which owns trawl's database and has no other privilege: not a
# superuser, cannot create roles or databases, and no other role may connect to that database.
# trawl creates each namespace's schema in it and migrates it as that schema's owner.
#
# The postgres image runs this once, when its data volume is new (/docker-entrypoint-initdb.d, as
# the superuser). It also runs by hand against any server, as a superuser (psql's PG* variables
# say where):
#   POSTGRES_USER=postgres TRAWL_DB_PASSWORD=… PGHOST=db.example sh deploy/postgres/initdb/10-trawl-role.sh
# TRAWL_DB_USER and TRAWL_DB_NAME (default trawl) name the role and the database.
set -eu
: "${TRAWL_DB_PASSWORD:?set TRAWL_DB_PASSWORD: the password of trawl's role}"
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname postgres \
  --set=role="${TRAWL_DB_USER:-trawl}" --set=db="${TRAWL_DB_NAME:-trawl}" --set=password="$TRAWL_DB_PASSWORD" <<'SQL'
CREATE ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE DATABASE :"db" OWNER :"role";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
SQL
