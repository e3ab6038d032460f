# shellcheck shell=bash
# Bringing up what trawl's tests need on a Debian/Ubuntu machine: Redis and PostgreSQL on their
# standard loopback ports (PostgreSQL with trust auth for loopback, as the tests connect as
# postgres without a password), the redis-server binary (the Redis Cluster tests start their own
# servers), and docker-compose (the compose file's test). Sourced by .ci/run (CI) and
# scripts/setup.sh (a new machine); defines functions only. Installs through apt-get, as root or
# with sudo. LOG_TAG names the caller in the log lines.

log() { printf '[%s] %s\n' "${LOG_TAG:-setup}" "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
apt_install() { # packages…
  if [ "$apt_updated" = 0 ]; then
    log "apt-get update"
    as_root apt-get update -qq
    apt_updated=1
  fi
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# systemd manages services where it runs (a desktop or a VM); containers and CI machines have none.
has_systemd() { [ -d /run/systemd/system ]; }

redis_up() {
  # PING over bash's /dev/tcp: needs no client tools.
  (exec 3<>/dev/tcp/127.0.0.1/6379 && printf 'PING\r\n' >&3 && timeout 2 head -c 5 <&3 | grep -q PONG) 2>/dev/null
}

postgres_up() {
  (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null && { ! command -v pg_isready >/dev/null || pg_isready -q -h 127.0.0.1 -p 5432; }
}

wait_for() { # name check seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do "$2" && return 0; sleep 0.1; done
  log "$1 did not come up within $3 s"; return 1
}

ensure_redis() {
  # The binary is needed even when a Redis already answers: the cluster tests start their own.
  if ! command -v redis-server >/dev/null; then
    log "redis: redis-server is not installed; installing it"
    apt_install redis-server
  fi
  if redis_up; then log "redis: up on 127.0.0.1:6379"; return; fi
  log "redis: starting on 127.0.0.1:6379"
  if has_systemd; then
    as_root systemctl start redis-server
  else
    as_root mkdir -p /var/lib/redis /var/log/redis
    as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
  fi
  wait_for redis redis_up 20
}

ensure_postgres() {
  if postgres_up; then log "postgres: up on 127.0.0.1:5432"; return; fi
  local installed_now=0
  if ! command -v pg_ctlcluster >/dev/null; then
    log "postgres: not installed; installing it"
    apt_install postgresql
    installed_now=1
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  if [ "$installed_now" = 1 ]; then
    # Tests connect as postgres over loopback without a password, as on the standard machine.
    local hba="/etc/postgresql/$version/main/pg_hba.conf"
    log "postgres: trust auth for postgres over loopback in $hba"
    as_root sed -i -E 's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/' "$hba"
    as_root sed -i -E 's/^(local\s+all\s+postgres\s+)\S+/\1trust/' "$hba"
  fi
  log "postgres: starting cluster $version/main"
  if has_systemd; then
    as_root systemctl start "postgresql@$version-main"
  else
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  fi
  # The package may have started the cluster before the trust lines were written: reload them.
  if [ "$installed_now" = 1 ]; then as_root pg_ctlcluster --skip-systemctl-redirect "$version" main reload || true; fi
  wait_for postgres postgres_up 30
}

ensure_docker_compose() {
  # `docker-compose config` validates docker-compose.yml without a Docker engine (Debian's
  # docker-compose package); a Compose v2 plugin alone does not provide this command.
  if command -v docker-compose >/dev/null; then log "docker-compose: installed"; return; fi
  log "docker-compose: not installed; installing it (the compose file's test needs it)"
  apt_install docker-compose
}

ensure_kubectl() {
  # apps/cli/test/k8s.test.ts renders deploy/k8s with kubectl's built-in kustomize (5.x: components,
  # labels). This kind of machine ships kubectl; Debian's own kubernetes-client (1.20, kustomize
  # 2) is too old to render the manifests, so there is nothing to install from apt.
  if command -v kubectl >/dev/null; then log "kubectl: $(kubectl version --client 2>/dev/null | grep -i kustomize | head -n 1)"; return; fi
  log "kubectl: not installed; the Kubernetes manifests' test will fail (install kubectl 1.27 or later)"
}

# Where the repository is (services.sh lives in scripts/).
TRAWL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# --- RedisBloom test server (port 6380) ---------------------------------------------------------
# The seen-set's contract suite runs against both Bloom backends on every run, so the tests need
# a Redis with the RedisBloom module next to the module-free one on 6379. The module is vendored
# in test/redisbloom/ (test-only; see its README). ensure_redisbloom starts a throwaway server for
# it (no persistence) and leaves it running, like the servers above, so concurrent runs share it.
REDISBLOOM_PORT=6380
REDISBLOOM_SHA256=acbdbf7da4c5b9f2786cdaee928cf0c3cad5a969dfbbcb8f1352de63006aa669
REDISBLOOM_LOG="${TMPDIR:-/tmp}/trawl-redisbloom-$REDISBLOOM_PORT.log"

redisbloom_ask() { # inline command: prints the raw reply (QUIT makes the server close the socket)
  (exec 3<>"/dev/tcp/127.0.0.1/$REDISBLOOM_PORT" && printf '%s\r\nQUIT\r\n' "$1" >&3 && timeout 2 cat <&3) 2>/dev/null || true
}
redisbloom_up() { redisbloom_ask PING | grep -q PONG; }
redisbloom_has_module() { redisbloom_ask 'MODULE LIST' | tr -d '\r' | grep -qx bf; }
redisbloom_fail() { log "redisbloom: $*"; log "redisbloom: the seen-set tests need it (REDISBLOOM_URL, default redis://127.0.0.1:$REDISBLOOM_PORT); see test/redisbloom/README.md"; exit 1; }

redisbloom_start() { # absolute module path; succeeds once the server answers with the module loaded
  local pid i
  : >"$REDISBLOOM_LOG" 2>/dev/null || true
  setsid nohup redis-server --port "$REDISBLOOM_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "${TMPDIR:-/tmp}" --logfile "$REDISBLOOM_LOG" --loadmodule "$1" >/dev/null 2>&1 </dev/null &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    if redisbloom_up; then redisbloom_has_module && return 0; kill "$pid" 2>/dev/null; return 1; fi
    kill -0 "$pid" 2>/dev/null || { grep -i -m 3 'module' "$REDISBLOOM_LOG" 2>/dev/null | sed 's/^/[ci]   /'; return 1; }
    sleep 0.1
  done
  kill "$pid" 2>/dev/null; return 1
}

ensure_redisbloom() {
  if [ -n "${REDISBLOOM_URL:-}" ]; then log "redisbloom: using REDISBLOOM_URL=$REDISBLOOM_URL"; return; fi
  if redisbloom_up; then
    redisbloom_has_module || redisbloom_fail "something answers on 127.0.0.1:$REDISBLOOM_PORT without the RedisBloom module (bf); stop it or free the port"
    log "redisbloom: up on $REDISBLOOM_PORT"; return
  fi
  local dir="$TRAWL_ROOT/test/redisbloom" built
  if ! command -v redis-server >/dev/null; then
    apt_install redis-server || redisbloom_fail "redis-server is not installed and could not be installed"
  fi
  echo "$REDISBLOOM_SHA256  $dir/redisbloom.so" | sha256sum -c --quiet - >/dev/null 2>&1 \
    || redisbloom_fail "$dir/redisbloom.so does not have the sha256 recorded in test/redisbloom/README.md"
  log "redisbloom: starting redis-server on $REDISBLOOM_PORT with $dir/redisbloom.so"
  redisbloom_start "$dir/redisbloom.so" && return
  log "redisbloom: this machine cannot load the vendored module; building it from the vendored source"
  if ! command -v gcc >/dev/null; then
    apt_install build-essential || redisbloom_fail "gcc is missing and build-essential could not be installed"
  fi
  built="$(mktemp -d)/redisbloom.so"
  bash "$dir/build.sh" "$built" || redisbloom_fail "building the module from test/redisbloom/redisbloom-2.4.23-src.tar.gz failed"
  redisbloom_start "$built" || redisbloom_fail "redis-server on $REDISBLOOM_PORT did not start with the module built here (log: $REDISBLOOM_LOG)"
}
# --- end of the RedisBloom block ------------------------------------------------------------------

# --- proxies: the fetcher's proxy tests start their own squid (HTTP CONNECT) and microsocks
# (SOCKS5) on free loopback ports with temporary configs; only the binaries are needed here. ----
ensure_squid() {
  if command -v squid >/dev/null || [ -x /usr/sbin/squid ]; then log "squid: installed"; return; fi
  log "squid: not installed; installing (the proxy tests run a real one)"
  apt_install squid
  # The package may start a system squid on :3128; the tests need only the binary.
  if has_systemd; then as_root systemctl disable --now squid >/dev/null 2>&1 || true; fi
}

ensure_microsocks() {
  if command -v microsocks >/dev/null; then log "microsocks: installed"; return; fi
  log "microsocks: not installed; installing (the proxy tests run a real one)"
  apt_install microsocks
}
