# syntax=docker/dockerfile:1
# One image for every trawl app: `docker run trawl worker | scheduler | dashboard`, or any trawl
# command (`docker run trawl crawl https://example.com/`). See deploy/entrypoint.sh.
#
#   docker build -t trawl .                                      # every app, no browser
#   docker build --target renderer -t trawl-renderer .          # the same with Debian's Chromium
#
# Stages: build (all dependencies, `npm run build` → dist/ of every project), prod-deps
# (production dependencies only: no tsx, TypeScript, Nx, vitest or the benchmarks' Crawlee),
# runtime (Node, production node_modules, dist/, the Lua scripts and SQL migrations), renderer
# (runtime plus Debian's chromium, for workers that render: TRAWL_WORKER_ROLES with `render`).
# The default target is the runtime: the last stage below is it again.
#
# No dependency's install script runs unasked: `npm ci --ignore-scripts`, then `npm rebuild` of
# the packages package.json's allowScripts approves (esbuild checks its platform binary;
# msgpackr-extract picks its prebuilt addon), whatever the npm version in the base image.
#
# The base image: pin it by digest for a reproducible build (`NODE_IMAGE=node:20-bookworm-slim@sha256:<digest>`,
# as a build argument or here; scripts/pin-images.sh prints the current digests where a registry
# answers).
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NX_DAEMON=false NX_NO_CLOUD=true
COPY . .
RUN npm ci --no-audit --no-fund --ignore-scripts && npm rebuild esbuild msgpackr-extract && npm run build
# What the runtime needs of each workspace: its manifest (npm ci wants every workspace of the
# lockfile), dist/, and the files dist/ resolves relative to import.meta.url (lua/, migrations/,
# the dashboard's static/), plus the CLI's bin/. Source maps, declarations and build info stay behind.
RUN set -eu; \
    for project in libs/* apps/* bench; do \
      mkdir -p "/out/$project"; \
      cp "$project/package.json" "/out/$project/"; \
      for part in dist lua migrations bin static; do \
        if [ -e "$project/$part" ]; then cp -R "$project/$part" "/out/$project/"; fi; \
      done; \
    done; \
    find /out \( -name '*.map' -o -name '*.d.ts' -o -name '*.tsbuildinfo' \) -delete; \
    mkdir -p /manifests; \
    cp package.json package-lock.json /manifests/; \
    for project in libs/* apps/* bench; do mkdir -p "/manifests/$project" && cp "$project/package.json" "/manifests/$project/"; done

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY --from=build /manifests/ ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm rebuild msgpackr-extract && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    TRAWL_CONTENT_DIR=/data/content
WORKDIR /app
COPY --from=prod-deps /app/ ./
COPY --from=build /out/ ./
COPY deploy/entrypoint.sh /usr/local/bin/trawl
COPY deploy/healthcheck.mjs deploy/healthcheck.mjs
# The node image's unprivileged user; /data holds page bodies (a volume in compose).
RUN mkdir -p /data/content && chown -R node:node /data
USER node
VOLUME ["/data"]
# Until the apps serve /healthz: Redis and PostgreSQL answer (see deploy/healthcheck.mjs;
# TRAWL_HEALTHCHECK_URL switches it to an HTTP check, e.g. the dashboard on port 8930).
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 CMD ["trawl", "healthcheck"]
# The dashboard's port (bull-board, REST API, /metrics, /healthz when they land).
EXPOSE 8930
ENTRYPOINT ["trawl"]
CMD ["worker"]

# The runtime with a browser: Debian's chromium package (never a downloaded browser build), which
# playwright-core drives headless, sandbox off (an unprivileged container has no user namespaces
# for it) and /dev/shm unused; fonts so that pages lay out as they would for a reader. Render
# workers (TRAWL_WORKER_ROLES=render) run it, and so do workers that keep the `render` role.
# apt takes the package version of the day (the security archive's): the base image's digest
# pins Node and Debian, not this layer.
FROM runtime AS renderer
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium fonts-liberation \
    && rm -rf /var/lib/apt/lists/* \
    && chromium --version
ENV TRAWL_RENDER_CHROMIUM=/usr/bin/chromium
USER node

# The default target: the runtime, without the browser.
FROM runtime
