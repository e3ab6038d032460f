#!/usr/bin/env node
// The container HEALTHCHECK of every trawl app (`trawl healthcheck` in the image). Exit 0: healthy.
//
// - With TRAWL_HEALTHCHECK_URL (an app that serves HTTP, e.g. the dashboard's
//   http://127.0.0.1:8930/healthz once it has one): healthy while that URL answers 2xx.
// - Otherwise (the worker and the scheduler have no HTTP port yet): healthy while the servers
//   the process needs answer — Redis (every master of a cluster) and PostgreSQL, read from the
//   same settings the app uses. This says the container can work, not that its event loop is
//   alive; a crashed app ends the container anyway (it is PID 1's only child). When the apps
//   serve /healthz, set TRAWL_HEALTHCHECK_URL for them too and this becomes a liveness check.
//
// The HTTP check loads nothing but Node itself: loading trawl's config, pg and ioredis first took
// over the HEALTHCHECK's 10 s timeout on a busy machine, turning a live app "unhealthy".
const TIMEOUT_MS = 2000;

async function check() {
  const url = process.env.TRAWL_HEALTHCHECK_URL;
  if (url) {
    const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    return response.ok ? null : `${url} answered ${response.status}`;
  }
  const [{ loadConfig }, { probePostgres }, { probeRedis }] = await Promise.all([import('@trawl/config'), import('@trawl/db'), import('@trawl/redis')]);
  const config = loadConfig({ env: process.env });
  const problems = [];
  if (!config.redisUrl) problems.push('REDIS_URL is not set');
  else if (!(await probeRedis(config.redisUrl, TIMEOUT_MS, { cluster: config.redisCluster }))) problems.push('Redis does not answer');
  if (!config.databaseUrl) problems.push('DATABASE_URL is not set');
  else if (!(await probePostgres(config.databaseUrl, TIMEOUT_MS))) problems.push('PostgreSQL does not answer');
  return problems.length > 0 ? problems.join('; ') : null;
}

check().then(
  (problem) => {
    if (problem) process.stderr.write(`unhealthy: ${problem}\n`);
    process.exit(problem ? 1 : 0);
  },
  (error) => {
    process.stderr.write(`unhealthy: ${error.message}\n`);
    process.exit(1);
  },
);
