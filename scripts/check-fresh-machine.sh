#!/usr/bin/env bash
# Checks scripts/setup.sh as a new machine would run it, on this machine, without stopping or
# touching its Redis and PostgreSQL (others may be using them). Linux, as root (unshare).
#
#   bash scripts/check-fresh-machine.sh [clone-dir]            setup.sh, then a few test files
#   bash scripts/check-fresh-machine.sh [clone-dir] --demo     `npx trawl demo` with no Redis at all
#
# How "not installed, not running" is simulated, inside private namespaces that end with the run:
# - network namespace (unshare -n, loopback only): nothing listens on 6379 or 5432 there, and
#   what setup.sh starts listens there only;
# - mount namespace (unshare -m, private): redis-server, redis-cli, the PostgreSQL commands
#   (pg_wrapper: psql, pg_isready, …; pg_ctlcluster, pg_createcluster, pg_lsclusters) and
#   docker-compose are covered by an empty, non-executable file, so `command -v` finds none of
#   them; /etc/postgresql, /var/lib/postgresql, /var/run/postgresql, /var/lib/redis and
#   /var/log/redis are empty tmpfs (no cluster exists);
# - apt-get is replaced (first on PATH) by a stand-in that "installs" a package by uncovering its
#   commands again, and for postgresql creates the cluster as the package's postinst does
#   (pg_createcluster <version> main). Nothing is downloaded or installed for real.
# The clone is made from this checkout's committed HEAD; npm ci runs from npm's cache (the
# network namespace has no route to the registry).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
clone=${1:-/tmp/trawl-fresh-clone}
mode=${2:-setup}
[ "$(id -u)" = 0 ] || { echo "run as root (unshare, mount)"; exit 1; }

rm -rf "$clone"
git clone -q "$here" "$clone"
sim=$(mktemp -d /tmp/trawl-fresh-sim.XXXXXX)
trap 'rm -rf "$sim"' EXIT
: >"$sim/hidden"
chmod 644 "$sim/hidden"
mkdir -p "$sim/bin"

redis_cmds="/usr/bin/redis-server /usr/bin/redis-cli"
pg_cmds="/usr/share/postgresql-common/pg_wrapper /usr/bin/pg_ctlcluster /usr/bin/pg_createcluster /usr/bin/pg_lsclusters"
compose_cmds="/usr/bin/docker-compose"
pg_version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)

cat >"$sim/bin/apt-get" <<EOF
#!/usr/bin/env bash
# Stand-in for apt-get (see scripts/check-fresh-machine.sh).
echo "[simulated apt-get] \$*" >&2
[ "\${1:-}" = install ] || exit 0
for package in "\$@"; do
  case "\$package" in
    redis-server) for c in $redis_cmds; do umount "\$c"; done ;;
    postgresql) for c in $pg_cmds; do umount "\$c"; done; pg_createcluster $pg_version main >/dev/null ;;
    docker-compose) for c in $compose_cmds; do umount "\$c"; done ;;
  esac
done
EOF
chmod +x "$sim/bin/apt-get"

cat >"$sim/inside.sh" <<EOF
set -euo pipefail
ip link set lo up
for c in $redis_cmds $pg_cmds $compose_cmds; do mount --bind "$sim/hidden" "\$c"; done
for d in /etc/postgresql /var/lib/postgresql /var/run/postgresql /var/lib/redis /var/log/redis; do mount -t tmpfs tmpfs "\$d"; done
chown postgres:postgres /var/lib/postgresql /var/run/postgresql
chmod 2775 /var/run/postgresql
export PATH="$sim/bin:\$PATH"
cd "$clone"
echo "--- hidden: \$(for c in redis-server psql pg_ctlcluster docker-compose; do command -v \$c >/dev/null && echo "\$c FOUND" || echo "\$c missing"; done | tr '\n' ' ')"
if [ "$mode" = --demo ]; then
  npm ci --no-audit --no-fund --prefer-offline >/dev/null
  echo "--- npx trawl demo (no Redis answers, no redis-server):"
  set +e
  npx trawl demo --no-progress
  echo "--- exit code \$?"
  exit 0
fi
echo "--- bash scripts/setup.sh"
bash scripts/setup.sh
echo "--- bash scripts/setup.sh again (idempotent)"
bash scripts/setup.sh
echo "--- tests in the simulated machine"
npx vitest run libs/db libs/frontier apps/cli/test/deploy.test.ts apps/cli/test/embedded.test.ts
EOF
unshare -n -m --propagation private bash "$sim/inside.sh"
