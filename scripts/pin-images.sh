#!/usr/bin/env bash
# Pins the images the fleet runs by digest: the Dockerfile's NODE_IMAGE and every *_IMAGE of
# .env.example but trawl's own (TRAWL_IMAGE and TRAWL_RENDERER_IMAGE, built here). For each one
# it asks the registry which digest the tag points at now (skopeo inspect: the multi-platform
# index digest) and prints `NAME=image:tag@sha256:<digest>`; with --write it also writes them into
# the Dockerfile and .env.example. Run it where the registries answer, then review and commit the change.
#
#   bash scripts/pin-images.sh            # print the pins
#   bash scripts/pin-images.sh --write    # and write them
#
# Needs skopeo (apt-get install skopeo). A tag already pinned is resolved again from its tag, so
# running it later refreshes every pin.
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
[ "${1:-}" = --write ] && write=1

command -v skopeo >/dev/null || { echo "pin-images: skopeo is not installed (apt-get install skopeo)" >&2; exit 1; }

qualified() { # a Docker Hub short name in full (redis:8 → docker.io/library/redis:8)
  case "$1" in
    */*/*) echo "$1" ;;
    */*) case "${1%%/*}" in *.* | *:* | localhost) echo "$1" ;; *) echo "docker.io/$1" ;; esac ;;
    *) echo "docker.io/library/$1" ;;
  esac
}

pin() { # NAME image[@digest] → prints NAME=image@sha256:…
  local name=$1 image=${2%@*} digest
  digest=$(skopeo inspect --retry-times 2 --format '{{.Digest}}' "docker://$(qualified "$image")") \
    || { echo "pin-images: $name: no digest for $image" >&2; return 1; }
  [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "pin-images: $name: unexpected digest '$digest' for $image" >&2; return 1; }
  echo "$name=$image@$digest"
}

pins=()
pins+=("$(pin NODE_IMAGE "$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile)")")
while IFS='=' read -r name value; do
  case "$name" in TRAWL_IMAGE | TRAWL_RENDERER_IMAGE) continue ;; esac
  pins+=("$(pin "$name" "$value")")
done < <(grep -E '^[A-Z_]+_IMAGE=' .env.example)

printf '%s\n' "${pins[@]}"
[ "$write" = 1 ] || exit 0
for line in "${pins[@]}"; do
  name=${line%%=*}
  value=${line#*=}
  if [ "$name" = NODE_IMAGE ]; then
    sed -i "s|^ARG NODE_IMAGE=.*|ARG NODE_IMAGE=$value|" Dockerfile
  else
    sed -i "s|^$name=.*|$name=$value|" .env.example
    # docker-compose.yml's fallbacks follow, so a fleet without .env runs the pinned images too.
    sed -i "s|\${$name:-[^}]*}|\${$name:-$value}|" docker-compose.yml
  fi
done
echo "pin-images: wrote the Dockerfile, .env.example and docker-compose.yml" >&2
