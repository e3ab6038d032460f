#!/usr/bin/env bash
# Makes this machine ready to develop and test trawl, from a fresh clone:
#   bash scripts/setup.sh && npm test
# Debian/Ubuntu: installs what is missing through apt-get (redis-server, postgresql,
# docker-compose), starts Redis and PostgreSQL on 127.0.0.1:6379 and :5432 if they are down
# (PostgreSQL with trust auth for loopback, as the tests connect as postgres without a
# password), then runs npm ci. Safe to run again: it only does what is not done yet, and says
# what it does. macOS: prints the Homebrew commands instead. Needs root or sudo for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_TAG=setup
# shellcheck source=services.sh
source scripts/services.sh

node_ok() {
  command -v node >/dev/null && node -e '
    const [major, minor] = process.versions.node.split(".").map(Number);
    process.exit(major > 20 || (major === 20 && minor >= 19) ? 0 : 1);'
}

case "$(uname -s)" in
  Darwin)
    cat <<'MAC'
[setup] macOS: run these with Homebrew (https://brew.sh), then `npm test`:
  brew install node@20 redis postgresql@17 docker-compose
  brew services start redis
  brew services start postgresql@17
  createuser -s postgres     # Homebrew's PostgreSQL trusts local connections; the tests log in as postgres
  npm ci
MAC
    exit 0
    ;;
  Linux) ;;
  *)
    log "unsupported system $(uname -s): install Node.js >= 20.19, Redis >= 7 and PostgreSQL >= 15 yourself (see README)"
    exit 1
    ;;
esac
if ! command -v apt-get >/dev/null; then
  log "this script uses apt-get (Debian/Ubuntu); elsewhere install Node.js >= 20.19, redis-server >= 7, PostgreSQL >= 15 and docker-compose, then run npm ci"
  exit 1
fi
if ! node_ok; then
  log "Node.js >= 20.19 is needed (found: $(node --version 2>/dev/null || echo none)); install it from https://nodejs.org or your version manager, then run this again"
  exit 1
fi
log "node $(node --version), npm $(npm --version)"

ensure_redis
ensure_postgres
ensure_redisbloom
ensure_docker_compose
ensure_squid
ensure_microsocks

# The tests log in as postgres over loopback without a password.
if command -v psql >/dev/null && ! psql -h 127.0.0.1 -U postgres -d postgres -w -tAc 'select 1' >/dev/null 2>&1; then
  log "postgres: answers, but not to user postgres without a password; the tests need trust auth for loopback:"
  log "  set the method of the 'host all all 127.0.0.1/32' and '::1/128' lines to trust in pg_hba.conf, then reload PostgreSQL"
  log "  (or point DATABASE_URL at a database they may use: DATABASE_URL=postgres://user:password@127.0.0.1:5432/db npm test)"
  exit 1
fi

log "npm ci"
npm ci --no-audit --no-fund
log "ready: npm test runs the tests; npx trawl demo crawls a synthetic web"
