#!/bin/sh
# The image's entry point, installed as `trawl`: one image for every app.
#   trawl worker | scheduler | dashboard   the app (apps/<name>/dist/main.js)
#   trawl healthcheck                      the container HEALTHCHECK (deploy/healthcheck.mjs)
#   trawl <anything else>                  the trawl command (crawl, seed, status, dlq, config, …)
# Every app runs compiled JavaScript (NODE_ENV=production): no tsx, no sources in the image.
set -e
APP=${TRAWL_APP_DIR:-/app}
case "${1:-}" in
  worker | scheduler | dashboard)
    name=$1
    shift
    exec node "$APP/apps/$name/dist/main.js" "$@"
    ;;
  healthcheck)
    shift
    exec node "$APP/deploy/healthcheck.mjs" "$@"
    ;;
  *)
    exec node "$APP/apps/cli/bin/trawl.js" "$@"
    ;;
esac
