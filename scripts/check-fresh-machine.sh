#!/usr/bin/env bash
# Checks scripts/setup.sh as a new machine would run it, on this machine, without stopping or
# touching its Redis and PostgreSQL (others may be using them). Linux, as root (unshare).
#
#   bash scripts/check-fresh-machine.sh [clone-dir]            setup.sh twice, then a few test files
#   bash scripts/check-fresh-machine.sh [clone-dir] --demo     `npx trawl demo` with no Redis at all
#
# How "not installed, not running" is simulated, inside private namespaces that end with the run:
# - network namespace (unshare -n, loopback only): nothing listens on 6379 or 5432 there, and
#   what setup.sh starts listens there only;
# - mount namespace (unshare -m, private): /usr/bin is replaced by a copy (hard links) without
#   redis-*, the PostgreSQL commands (pg_*, and psql, createdb, … that link to pg_wrapper) and
#   docker-compose, so `command -v` finds none of them; /etc/postgresql, /var/lib/postgresql,
#   /var/run/postgresql, /var/lib/redis and /var/log/redis are empty tmpfs (no cluster exists);
# - apt-get is replaced (first on PATH) by a stand-in that "installs" a package by putting its
#   commands back into that /usr/bin, and for postgresql creates the cluster as the package's
#   postinst does (pg_createcluster <version> main). Nothing is downloaded or installed for real.
# The clone is made from this checkout's committed HEAD; npm ci runs from npm's cache (the
# network namespace has no route to the registry: npm_config_prefer_offline). What setup.sh
# started in the namespaces is stopped at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
clone=${1:-/tmp/trawl-fresh-clone}
mode=${2:-setup}
[ "$(id -u)" = 0 ] || { echo "run as root (unshare, mount)"; exit 1; }

rm -rf "$clone"
git clone -q "$here" "$clone"
sim=$(mktemp -d /tmp/trawl-fresh-sim.XXXXXX)
trap 'rm -rf "$sim"' EXIT
mkdir -p "$sim/bin" "$sim/removed"

# /usr/bin as a fresh machine has it: everything but Redis, PostgreSQL and docker-compose.
cp -al /usr/bin "$sim/usrbin"
redis_cmds=$(cd /usr/bin && ls redis-*)
pg_cmds=$(cd /usr/bin && { ls pg_*; find . -maxdepth 1 -lname '*pg_wrapper' -printf '%f\n'; } | sort -u)
compose_cmds=docker-compose
for f in $redis_cmds $pg_cmds $compose_cmds; do
  # (docker-compose may be missing on this machine too: then there is nothing to hide.)
  if [ -e "$sim/usrbin/$f" ]; then mv "$sim/usrbin/$f" "$sim/removed/$f"; fi
done
pg_version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)

{
  echo '#!/usr/bin/env bash'
  echo '# Stand-in for apt-get (see scripts/check-fresh-machine.sh): puts a package'"'"'s commands back.'
  echo 'echo "[simulated apt-get] $*" >&2'
  echo '[ "${1:-}" = install ] || exit 0'
  echo "back() { for f in \"\$@\"; do if [ -e \"$sim/removed/\$f\" ]; then cp -a \"$sim/removed/\$f\" /usr/bin/; fi; done; }"
  echo 'for package in "$@"; do'
  echo '  case "$package" in'
  echo "    redis-server) back $(echo $redis_cmds) ;;"
  echo "    postgresql) back $(echo $pg_cmds); pg_createcluster $pg_version main >/dev/null ;;"
  echo "    docker-compose) back $compose_cmds ;;"
  echo '  esac'
  echo 'done'
} >"$sim/bin/apt-get"
chmod +x "$sim/bin/apt-get"

{
  echo 'set -euo pipefail'
  echo 'ip link set lo up'
  echo "mount --bind '$sim/usrbin' /usr/bin"
  echo 'for d in /etc/postgresql /var/lib/postgresql /var/run/postgresql /var/lib/redis /var/log/redis; do mount -t tmpfs tmpfs "$d"; done'
  echo 'chown postgres:postgres /var/lib/postgresql /var/run/postgresql && chmod 2775 /var/run/postgresql'
  echo "export PATH='$sim/bin':\"\$PATH\""
  # No registry in here: npm installs from its cache, without asking (it would retry for minutes).
  echo 'export npm_config_prefer_offline=true npm_config_update_notifier=false'
  # Whatever setup.sh starts lives in these namespaces: stop it when the run ends.
  echo "trap 'redis-cli -p 6379 shutdown nosave >/dev/null 2>&1; redis-cli -p 6380 shutdown nosave >/dev/null 2>&1; pg_ctlcluster --skip-systemctl-redirect $pg_version main stop -m fast >/dev/null 2>&1' EXIT"
  echo "cd '$clone'"
  echo 'for c in redis-server psql pg_ctlcluster docker-compose; do command -v "$c" >/dev/null && echo "--- $c: FOUND" || echo "--- $c: not installed"; done'
  echo 'for p in 6379 5432; do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && echo "--- port $p: ANSWERS" || echo "--- port $p: nothing listens"; done'
  if [ "$mode" = --demo ]; then
    echo 'npm ci --no-audit --no-fund >/dev/null'
    echo 'echo "--- npx trawl demo (no Redis answers, no redis-server):"'
    echo 'set +e; npx trawl demo --no-progress; echo "--- exit code $?"'
  else
    echo 'echo "--- bash scripts/setup.sh"'
    echo 'bash scripts/setup.sh'
    echo 'echo "--- bash scripts/setup.sh, again (idempotent)"'
    echo 'bash scripts/setup.sh'
    echo 'echo "--- tests on the simulated machine"'
    echo 'npx vitest run libs/db libs/frontier apps/cli/test/deploy.test.ts apps/cli/test/embedded.test.ts'
    echo 'echo "--- npx trawl demo"'
    echo 'npx trawl demo --no-progress --json | tail -n 25'
  fi
} >"$sim/inside.sh"
unshare -n -m --propagation private bash "$sim/inside.sh"
