#!/usr/bin/env bash
# trawl's containers, run for real with podman on a machine without a Docker engine:
#
#   bash scripts/check-containers.sh           # everything below; exit 0 only if it all holds
#   bash scripts/check-containers.sh image     # only install, the base image and the build
#   bash scripts/check-containers.sh fleet     # … and the fleet run (4), not compose (5)
#   bash scripts/check-containers.sh compose   # … and compose (5), not the fleet run
#   TRAWL_CHECK_SKIP_BUILD=1 bash scripts/check-containers.sh   # reuse localhost/trawl:check as built
#
# 1. Installs podman, runc, catatonit, debootstrap and podman-compose (Debian) if missing. podman
#    runs with this script's own containers.conf (runc, cgroupfs, fixed rlimits), never the
#    machine's.
# 2. Makes the base image the Dockerfile's FROM names when no registry can give it: a minimal
#    Debian bookworm from the mirror apt already uses (debootstrap), this machine's Node 20 and
#    npm, and the `node` user (uid 1000) of the official image; imported under the same name.
# 3. Builds the Dockerfile as it is into localhost/trawl:check (image format docker, so the
#    HEALTHCHECK is kept).
# 4. Against this machine's Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432), in a fresh
#    namespace that is removed afterwards: runs the schedulers, fetch-only workers, processors
#    (the process stage alone, sharing the workers' content store) and dashboard containers
#    (host network), seeds a synthetic web on loopback through the dashboard's API, stops one
#    worker with `podman stop` mid-crawl (SIGTERM: it must drain and exit 0), kills another with
#    `podman kill`, and judges the crawl from the web's request log: complete, each page once, one
#    request in flight per host, no interval under the delay, every page recorded (by the
#    processors: the workers only fetch), no request from a processor. Checks every container's
#    health check and that every process runs as a non-root user.
# 5. Brings the trawl services of docker-compose.yml up with podman-compose
#    (deploy/compose.local.yml points them at the same local Redis and PostgreSQL), checks they
#    become healthy, and takes them down.
#
# Idempotent: a second run reuses the base image (and the debootstrapped tree under
# $TRAWL_CHECK_STATE), rebuilds the image from the build cache, and removes only what it made.
# Root (or sudo) for apt-get, debootstrap and podman.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_TAG=containers
# shellcheck source=services.sh
source scripts/services.sh

STATE=${TRAWL_CHECK_STATE:-/var/tmp/trawl-check}
IMAGE=${TRAWL_CHECK_IMAGE:-localhost/trawl:check}
# Replicas of each role in the fleet run. The stages run apart, as a split fleet runs them: the
# workers only fetch (TRAWL_WORKER_ROLES=fetch) and hand each page off; the processors
# (TRAWL_WORKER_ROLES=process) parse and record every one of them, reading the bodies from the
# content store the two share. So every page recorded crossed from one container to another.
SCHEDULERS=2
WORKERS=3
PROCESSORS=2

BUILD_ARGS=()

fail() { log "FAIL: $*"; exit 1; }

# --- 1. podman ------------------------------------------------------------------------------------
ensure_podman() {
  local tool missing=()
  for tool in podman runc debootstrap podman-compose curl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  # The init process compose's `init: true` asks for (podman run --init).
  [ -x /usr/libexec/podman/catatonit ] || [ -x /usr/bin/catatonit ] || missing+=(catatonit)
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
  mkdir -p "$STATE"
  # crun fails on this kind of machine's cgroups and podman's default rlimits are refused: runc,
  # cgroupfs and explicit rlimits, for podman and podman-compose alike (CONTAINERS_CONF).
  local init_path=/usr/libexec/podman/catatonit
  [ -x "$init_path" ] || init_path=/usr/bin/catatonit
  cat >"$STATE/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
init_path = "$init_path"

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
CONF
  export CONTAINERS_CONF="$STATE/containers.conf"
  log "podman $(podman --version | awk '{print $3}'), runc, config $CONTAINERS_CONF"
}

# --- 2. the base image ----------------------------------------------------------------------------
node_image() { sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile; }

debian_mirror() {
  local uri
  uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '/^deb / && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

ensure_base_image() {
  local ref name qualified rootfs mirror
  ref=$(node_image)
  [ -n "$ref" ] || fail "Dockerfile has no ARG NODE_IMAGE=…"
  name=${ref%@*}
  case "$name" in */*) qualified=$name ;; *) qualified="docker.io/library/$name" ;; esac
  # Made here, it cannot carry the pinned digest: the build names it by tag.
  [ "$ref" = "$name" ] || BUILD_ARGS=(--build-arg "NODE_IMAGE=$qualified")
  if podman image exists "$ref"; then BUILD_ARGS=(); log "base image: $ref is here"; return; fi
  if podman image exists "$qualified"; then log "base image: $qualified is here"; return; fi
  log "base image: pulling $ref"
  if timeout 120 podman pull -q "docker.io/library/$ref" >/dev/null 2>&1 || timeout 120 podman pull -q "$ref" >/dev/null 2>&1; then
    BUILD_ARGS=()
    log "base image: pulled"
    return
  fi
  log "base image: no registry gives $ref here; making it from Debian packages and this machine's Node"
  node -e 'process.exit(process.versions.node.split(".")[0] === "20" ? 0 : 1)' \
    || fail "the base image needs Node 20 (the Dockerfile's $name); this machine has $(node --version)"
  rootfs="$STATE/rootfs"
  if [ ! -e "$rootfs/.trawl-debootstrap-done" ]; then
    mirror=$(debian_mirror)
    log "base image: debootstrap --variant=minbase bookworm from $mirror (a few minutes)"
    rm -rf "$rootfs"
    nice -n 10 debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$STATE/debootstrap.log" 2>&1 \
      || fail "debootstrap failed (log: $STATE/debootstrap.log)"
    touch "$rootfs/.trawl-debootstrap-done"
  fi
  # Node where the official image has it (/usr/local), with npm and corepack beside it.
  local lib
  lib=$(readlink -f "$(command -v npm)")
  lib=${lib%/npm/bin/npm-cli.js}
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/node_modules"
  cp "$(readlink -f "$(command -v node)")" "$rootfs/usr/local/bin/node"
  rm -rf "$rootfs/usr/local/lib/node_modules/npm" "$rootfs/usr/local/lib/node_modules/corepack"
  cp -R "$lib/npm" "$rootfs/usr/local/lib/node_modules/npm"
  if [ -d "$lib/corepack" ]; then cp -R "$lib/corepack" "$rootfs/usr/local/lib/node_modules/corepack"; fi
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # This machine's npm trust settings: where the npm registry is reached through a TLS proxy with
  # its own CA, the build's `npm ci` needs the same CA file the machine's npm uses.
  local cafile
  cafile=$(npm config get cafile 2>/dev/null || true)
  mkdir -p "$rootfs/usr/local/etc"
  if [ -n "$cafile" ] && [ "$cafile" != null ] && [ -f "$cafile" ]; then
    mkdir -p "$rootfs$(dirname "$cafile")"
    cp "$cafile" "$rootfs$cafile"
    printf 'cafile=%s\n' "$cafile" >"$rootfs/usr/local/etc/npmrc"
  else
    rm -f "$rootfs/usr/local/etc/npmrc"
  fi
  # The official image's unprivileged user, which the Dockerfile's runtime stage runs as.
  chroot "$rootfs" sh -c 'getent passwd node >/dev/null || { groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node; }'
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
  tar -C "$rootfs" --numeric-owner --exclude=./.trawl-debootstrap-done -c . \
    | podman import --change 'CMD ["node"]' --change "ENV NODE_VERSION=$(node --version | tr -d v)" - "$qualified" >/dev/null
  log "base image: $qualified made ($(podman image inspect --format '{{.Size}}' "$qualified" | awk '{printf "%.0f MB", $1 / 1e6}'))"
}

# --- 3. the image ---------------------------------------------------------------------------------
build_image() {
  if [ "${TRAWL_CHECK_SKIP_BUILD:-0}" = 1 ] && podman image exists "$IMAGE"; then
    log "TRAWL_CHECK_SKIP_BUILD=1: using $IMAGE as it was built"
  else
    really_build_image
  fi
  [ "$(podman image inspect --format '{{.Config.User}}' "$IMAGE")" = node ] || fail "$IMAGE does not run as the node user"
  podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" | grep -q healthcheck \
    || fail "$IMAGE has no HEALTHCHECK (build it with --format docker)"
}

really_build_image() {
  log "building $IMAGE from the Dockerfile (podman build --format docker --network=host)"
  local started=$SECONDS
  nice -n 10 podman build --format docker --network=host "${BUILD_ARGS[@]}" -t "$IMAGE" . >"$STATE/build.log" 2>&1 \
    || { tail -n 40 "$STATE/build.log"; fail "podman build failed (log: $STATE/build.log)"; }
  log "built $IMAGE in $((SECONDS - started)) s: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}')"
}

# --- 4. the fleet ---------------------------------------------------------------------------------
RUN_ID=$(od -An -tx1 -N4 /dev/urandom | tr -d ' \n')
NAMESPACE="check_$RUN_ID"
# trawl logs in as a role of its own that owns one database (deploy/postgres/initdb/, as in
# compose): the run proves the apps need no superuser.
DB_ROLE="trawl_check_$RUN_ID"
DB_NAME="trawl_check_$RUN_ID"
DB_PASSWORD=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
API_TOKEN=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
DELAY_MS=500
# The page bodies, shared by the workers (which store them) and the processors (which read them
# back): the local content store in a directory of this run, owned by the image's node user.
CONTENT_DIR="$STATE/content-$RUN_ID"
CONTAINERS=()

free_port() {
  node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

cleanup_fleet() {
  local c label="io.podman.compose.project=trawl-check-$RUN_ID"
  for c in "${CONTAINERS[@]}"; do podman rm -f -v "$c" >/dev/null 2>&1 || true; done
  rm -rf "$CONTENT_DIR"
  # What podman-compose made, even when the run stopped half-way: its containers with their
  # anonymous volumes (the image's /data), its named volumes, its network.
  podman ps -aq --filter "label=$label" | xargs -r podman rm -f -v >/dev/null 2>&1 || true
  podman volume ls -q --filter "label=$label" | xargs -r podman volume rm >/dev/null 2>&1 || true
  podman network rm "trawl-check-${RUN_ID}_default" >/dev/null 2>&1 || true
  redis-cli -h 127.0.0.1 -p 6379 --scan --pattern "$NAMESPACE*:*" 2>/dev/null | xargs -r -n 500 redis-cli -h 127.0.0.1 -p 6379 del >/dev/null 2>&1 || true
  psql -h 127.0.0.1 -U postgres -d postgres -q -c "DROP DATABASE IF EXISTS \"$DB_NAME\" WITH (FORCE)" -c "DROP ROLE IF EXISTS \"$DB_ROLE\"" >/dev/null 2>&1 || true
}

# One container of a role, on the host network (the synthetic web and the servers are on
# loopback). Every worker and scheduler serves /metrics and /healthz on its own port. The image's
# HEALTHCHECK runs when asked (`podman healthcheck run`): podman's own timer needs systemd.
start_container() { # name role [extra podman args…]
  local name=$1 role=$2 port
  shift 2
  port=$(free_port)
  # As the Kubernetes manifests run it: read-only root filesystem (podman adds a tmpfs /tmp; /data
  # is the image's volume), no capabilities, no privilege escalation.
  podman run -d --name "$name" --label "trawl-check=$RUN_ID" --network=host \
    --read-only --cap-drop=ALL --security-opt=no-new-privileges \
    -e REDIS_URL=redis://127.0.0.1:6379 \
    -e "DATABASE_URL=postgres://$DB_ROLE:$DB_PASSWORD@127.0.0.1:5432/$DB_NAME" \
    -e "TRAWL_NAMESPACE=$NAMESPACE" -e TRAWL_PARTITIONS=12 \
    -e TRAWL_ALLOW_NETWORKS=127.0.0.0/8 -e TRAWL_SCOPE=any \
    -e "TRAWL_MIN_DELAY_MS=$DELAY_MS" -e TRAWL_ADAPTIVE_DELAY_FACTOR=0 -e TRAWL_CONCURRENCY=16 \
    -e TRAWL_STALLED_MS=5000 -e TRAWL_LEASE_MS=15000 -e TRAWL_SCHEDULER_LEASE_MS=3000 \
    -e TRAWL_FETCH_DEADLINE_MS=5000 -e TRAWL_FIRST_BYTE_TIMEOUT_MS=5000 -e TRAWL_IDLE_TIMEOUT_MS=5000 \
    -e "TRAWL_USER_AGENT=trawl-check/$name" -e TRAWL_LOG_LEVEL=warn \
    -e TRAWL_METRICS_HOST=127.0.0.1 -e "TRAWL_METRICS_PORT=$port" -e "TRAWL_HEALTHCHECK_URL=http://127.0.0.1:$port/healthz" \
    "$@" "$IMAGE" "$role" >/dev/null 2>>"$STATE/podman-run.log"
  CONTAINERS+=("$name")
}

wait_healthy() { # container seconds: runs the image's HEALTHCHECK until it passes
  local i
  for ((i = 0; i < $2; i++)); do
    podman healthcheck run "$1" >/dev/null 2>&1 && return 0
    [ "$(podman inspect --format '{{.State.Running}}' "$1")" = true ] || { podman logs --tail 20 "$1" >&2; fail "$1 exited ($(podman inspect --format '{{.State.ExitCode}}' "$1"))"; }
    sleep 1
  done
  podman logs --tail 20 "$1" >&2
  fail "$1: health check still failing after $2 s"
}

check_user() { # container: every process in it runs as the image's node user (uid 1000), none as root
  local users uid
  users=$(podman top "$1" user | tail -n +2 | sort -u | tr '\n' ' ')
  uid=$(podman exec "$1" id -u)
  [ "$users" = "node " ] && [ "$uid" = 1000 ] || fail "$1 runs processes as: $users(uid $uid), not only node (1000)"
  log "$1: every process runs as node (uid $uid)"
}

make_database() {
  log "PostgreSQL role and database $DB_ROLE / $DB_NAME (deploy/postgres/initdb: no superuser)"
  PGHOST=127.0.0.1 POSTGRES_USER=postgres TRAWL_DB_USER=$DB_ROLE TRAWL_DB_NAME=$DB_NAME TRAWL_DB_PASSWORD=$DB_PASSWORD \
    sh deploy/postgres/initdb/10-trawl-role.sh >/dev/null
}

run_fleet() {
  : >"$STATE/podman-run.log"
  log "fleet: namespace $NAMESPACE"
  local i dashboard_port name
  for ((i = 1; i <= SCHEDULERS; i++)); do start_container "trawl-check-$RUN_ID-scheduler-$i" scheduler; done
  mkdir -p "$CONTENT_DIR"
  chown 1000:1000 "$CONTENT_DIR"
  local processors=()
  for ((i = 1; i <= PROCESSORS; i++)); do
    start_container "trawl-check-$RUN_ID-processor-$i" worker -e TRAWL_WORKER_ROLES=process -v "$CONTENT_DIR:/data/content"
    processors+=("trawl-check-$RUN_ID-processor-$i")
  done
  # At info level a worker logs its drain report when it exits.
  local workers=()
  for ((i = 1; i <= WORKERS; i++)); do
    start_container "trawl-check-$RUN_ID-worker-$i" worker -e TRAWL_LOG_LEVEL=info -e TRAWL_WORKER_ROLES=fetch -v "$CONTENT_DIR:/data/content"
    workers+=("trawl-check-$RUN_ID-worker-$i")
  done
  dashboard_port=$(free_port)
  start_container "trawl-check-$RUN_ID-dashboard" dashboard \
    -e TRAWL_DASHBOARD_HOST=127.0.0.1 -e "TRAWL_DASHBOARD_PORT=$dashboard_port" -e "TRAWL_API_TOKENS=$API_TOKEN" \
    -e TRAWL_METRICS_PORT=0 -e "TRAWL_HEALTHCHECK_URL=http://127.0.0.1:$dashboard_port/healthz"
  for name in "${CONTAINERS[@]}"; do wait_healthy "$name" 90; done
  log "fleet: ${#CONTAINERS[@]} containers healthy ($SCHEDULERS schedulers, $WORKERS fetch-only workers, $PROCESSORS processors, 1 dashboard)"
  for name in "${CONTAINERS[@]}"; do check_user "$name"; done

  log "fleet: crawling a synthetic web seeded through the dashboard's API"
  CHECK_DASHBOARD_URL="http://127.0.0.1:$dashboard_port" CHECK_TOKEN=$API_TOKEN CHECK_DELAY_MS=$DELAY_MS \
    CHECK_WORKERS="$(IFS=,; echo "${workers[*]}")" CHECK_PROCESSORS="$(IFS=,; echo "${processors[*]}")" \
    TRAWL_NAMESPACE=$NAMESPACE DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB_NAME" \
    node --conditions=trawl-source --import tsx scripts/check-containers-crawl.ts | tee "$STATE/crawl-report.json" \
    || fail "the crawl in containers (report: $STATE/crawl-report.json)"
  local stopped
  stopped=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).stopped.container)' "$STATE/crawl-report.json")
  podman logs "$stopped" 2>&1 | grep -F '"exiting"' | tail -n 1 | sed "s/^/[containers] $stopped on SIGTERM: /" || true

  # The survivors are still healthy and still unprivileged after the crawl.
  for name in "${CONTAINERS[@]}"; do
    [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] || continue
    wait_healthy "$name" 30
    check_user "$name"
  done
  for name in "${CONTAINERS[@]}"; do podman rm -f -v "$name" >/dev/null 2>&1 || true; done
  CONTAINERS=()
  log "fleet: OK"
}

# --- 5. docker-compose.yml with podman-compose -------------------------------------------------
# The secrets come from the generator (scripts/setup-secrets.sh) into a file of this run, passed
# through the environment: podman-compose reads only a .env beside the compose file, and the
# checkout's own .env stays untouched.
generate_secrets() { # env file
  if [ -f scripts/setup-secrets.sh ]; then
    sh scripts/setup-secrets.sh --env-file "$1" --example .env.example >/dev/null
  else
    local line
    umask 077
    while IFS= read -r line; do
      case "$line" in
        [A-Z]*=*change-me*) printf '%s=%s\n' "${line%%=*}" "$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')" ;;
        *) printf '%s\n' "$line" ;;
      esac
    done <.env.example >"$1"
  fi
  ! grep -v '^#' "$1" | grep -qi 'change-me' || fail "the generated $1 still holds a placeholder secret"
}

# podman-compose 1.0.3 (Debian bookworm) gives a `network_mode: host` service its project network
# and a network alias as well, which podman refuses ("cannot set multiple networks without bridge
# network mode"): podman-compose calls podman through this wrapper, which drops both for such a
# container.
podman_for_compose() {
  cat >"$STATE/podman-host-net" <<'WRAP'
#!/usr/bin/env bash
args=("$@"); host=0; out=()
for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[i]}" = --network ] && [ "${args[i + 1]:-}" = host ] && host=1; done
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "$host" = 1 ] && { [ "${args[i]}" = --net ] || [ "${args[i]}" = --network-alias ]; }; then i=$((i + 1)); continue; fi
  out+=("${args[i]}")
done
exec podman "${out[@]}"
WRAP
  chmod +x "$STATE/podman-host-net"
  echo "$STATE/podman-host-net"
}

run_compose() {
  local project="trawl-check-$RUN_ID" env_file="$STATE/compose-$RUN_ID.env" port name names podman_path
  port=$(free_port)
  podman_path=$(podman_for_compose)
  generate_secrets "$env_file"
  compose() {
    (
      set -a
      # shellcheck disable=SC1090
      . "$env_file"
      set +a
      TRAWL_IMAGE=$IMAGE LOCAL_NAMESPACE="${NAMESPACE}_compose" LOCAL_DASHBOARD_PORT=$port \
        LOCAL_DATABASE_URL="postgres://$DB_ROLE:$DB_PASSWORD@127.0.0.1:5432/$DB_NAME" \
        podman-compose --podman-path "$podman_path" -p "$project" -f docker-compose.yml -f deploy/compose.local.yml "$@"
    )
  }
  # podman-compose 1.0.3 starts the servers too despite --no-deps; their images are not here, so
  # they fail to start and the apps use the machine's servers (compose.local.yml).
  log "compose: podman-compose up worker scheduler dashboard (project $project, override deploy/compose.local.yml)"
  compose up -d --no-deps worker scheduler dashboard >"$STATE/compose.log" 2>&1 \
    || { tail -n 30 "$STATE/compose.log"; compose down >/dev/null 2>&1 || true; fail "podman-compose up failed (log: $STATE/compose.log)"; }
  names=$(podman ps -a --filter "label=io.podman.compose.project=$project" --format '{{.Names}}' | grep -E '_(worker|scheduler|dashboard)_[0-9]+$' || true)
  [ "$(echo "$names" | grep -c .)" -ge 3 ] || { compose down >/dev/null 2>&1 || true; fail "podman-compose started: $names"; }
  for name in $names; do
    CONTAINERS+=("$name")
    wait_healthy "$name" 90
    check_user "$name"
  done
  # The compose fleet works: the dashboard answers its API with the generated token.
  local token
  token=$(sed -n 's/^TRAWL_API_TOKENS=//p' "$env_file" | cut -d, -f1)
  curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/crawl/stats" | grep -q '"schedulers"' \
    || { compose down >/dev/null 2>&1 || true; fail "the compose dashboard does not answer /v1/crawl/stats"; }
  log "compose: $(echo "$names" | tr '\n' ' ')healthy, unprivileged; the dashboard answers with the generated token"
  # podman-compose 1.0.3's down keeps the containers' anonymous volumes: remove them with them.
  podman ps -aq --filter "label=io.podman.compose.project=$project" | xargs -r podman rm -f -v >/dev/null
  compose down >>"$STATE/compose.log" 2>&1 || fail "podman-compose down failed"
  podman volume ls -q --filter "label=io.podman.compose.project=$project" | xargs -r podman volume rm >/dev/null 2>&1 || true
  # podman-compose logs the merged configuration, generated secrets included.
  rm -f "$env_file" "$STATE/compose.log"
  log "compose: OK"
}

main() {
  ensure_podman
  ensure_base_image
  build_image
  [ "${1:-all}" = image ] && return
  trap cleanup_fleet EXIT
  ensure_redis
  ensure_postgres
  make_database
  if [ "${1:-all}" != compose ]; then run_fleet; fi
  if [ "${1:-all}" != fleet ]; then run_compose; fi
  cleanup_fleet
  trap - EXIT
  log "all checks passed"
}

main "$@"
