#!/usr/bin/env node
// Start-up time and peak RSS of one `trawl worker` process, run from the TypeScript sources
// (tsx) and from the compiled dist/ — the two ways bin/trawl.js can run.
//
//   npm run build && node scripts/measure-runtime.mjs [--runs 5]
//
// Needs Redis and PostgreSQL (REDIS_URL / DATABASE_URL, else the local defaults) and GNU time
// (/usr/bin/time). Load only: `trawl config` (loads the whole program, no I/O). Start-up: from spawning `trawl worker` to its "worker started" log line (config
// loaded, Redis and PostgreSQL connected, schema migrated, queues consuming), schema already in
// place; its idle peak RSS is read by /usr/bin/time -v. Load: the same worker beside a
// `trawl crawl` (compiled) of a synthetic web served by `trawl testweb`; peak RSS again from
// /usr/bin/time -v once the crawl is done and the worker drained. Everything in its own
// namespace, removed afterwards.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Database } from '@trawl/db';
import { createRedis, deleteByPrefix } from '@trawl/redis';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(REPO, 'apps/cli/bin/trawl.js');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;
const tmp = mkdtempSync(join(tmpdir(), 'trawl-measure-'));

function start(args, env, { timed = false } = {}) {
  const timeFile = join(tmp, `time-${randomUUID().slice(0, 8)}.txt`);
  const command = timed ? ['/usr/bin/time', ['-v', '-o', timeFile, process.execPath, BIN, ...args]] : [process.execPath, [BIN, ...args]];
  const child = spawn(command[0], command[1], { cwd: REPO, env: { ...process.env, REDIS_URL, DATABASE_URL, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = { child, out: '', err: '', timeFile, startedAt: performance.now(), pid: null };
  child.stdout.on('data', (d) => (proc.out += d));
  child.stderr.on('data', (d) => (proc.err += d));
  proc.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return proc;
}

async function waitFor(check, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** pino's first line carries the worker's pid (under /usr/bin/time the child we spawned is time). */
const logPid = (proc) => {
  const line = proc.err.split('\n').find((l) => l.startsWith('{'));
  return line ? JSON.parse(line).pid : null;
};

const maxRssMb = (proc) => {
  const kb = /Maximum resident set size \(kbytes\): (\d+)/.exec(readFileSync(proc.timeFile, 'utf8'))?.[1];
  return Math.round(Number(kb) / 1024);
};

async function stopWorker(proc) {
  process.kill(logPid(proc), 'SIGTERM');
  const { code } = await proc.exited;
  if (code !== 0) throw new Error(`worker exited ${code}: ${proc.err.slice(-2000)}`);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function dropNamespace(namespace) {
  const redis = createRedis(REDIS_URL);
  await deleteByPrefix(redis, `${namespace}:`);
  redis.disconnect();
  const db = new Database({ url: DATABASE_URL, schema: namespace });
  await db.dropSchema();
  await db.close();
}

const results = {};
const web = start(['testweb', '--hosts', '40', '--pages', '50', '--links', '6', '--cross', '2', '--latency-ms', '2', '--seed', '3'], { TRAWL_RUNTIME: 'dist' });
const namespaces = [];
try {
  await waitFor(() => web.out.includes('"seeds"'), 20_000, 'the synthetic web');
  const seeds = JSON.parse(web.out).seeds;
  for (const mode of ['source', 'dist']) {
    const namespace = `t_measure_${mode}_${randomUUID().slice(0, 6)}`;
    namespaces.push(namespace);
    const env = {
      TRAWL_RUNTIME: mode,
      TRAWL_NAMESPACE: namespace,
      TRAWL_LOG_LEVEL: 'info',
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_SCOPE: 'any',
      TRAWL_MIN_DELAY_MS: '20',
      TRAWL_CONCURRENCY: '32',
      TRAWL_CONTENT_DIR: join(tmp, 'content', namespace),
    };
    // Loading the program alone (no I/O): `trawl config` prints the configuration and exits.
    const loads = [];
    for (let run = 0; run < RUNS; run += 1) {
      const config = start(['config'], env, { timed: true });
      const { code } = await config.exited;
      if (code !== 0) throw new Error(`trawl config exited ${code}: ${config.err}`);
      loads.push({ ms: performance.now() - config.startedAt, rss: maxRssMb(config) });
    }
    const startups = [];
    const idleRss = [];
    for (let run = 0; run <= RUNS; run += 1) {
      const worker = start(['worker'], env, { timed: true });
      await waitFor(() => worker.err.includes('"msg":"worker started"'), 60_000, `${mode} worker start`);
      const ms = performance.now() - worker.startedAt;
      await stopWorker(worker);
      if (run === 0) continue; // the first run creates the schema: not counted
      startups.push(ms);
      idleRss.push(maxRssMb(worker));
    }
    const worker = start(['worker'], env, { timed: true });
    await waitFor(() => worker.err.includes('"msg":"worker started"'), 60_000, `${mode} worker start`);
    const crawl = start(['crawl', ...seeds, '--json'], { ...env, TRAWL_RUNTIME: 'dist', TRAWL_LOG_LEVEL: 'warn' });
    const { code } = await crawl.exited;
    if (code !== 0) throw new Error(`crawl exited ${code}: ${crawl.err.slice(-2000)}`);
    await stopWorker(worker);
    const report = JSON.parse(worker.out.trim().split('\n').pop());
    results[mode] = {
      loadOnlyMsMedian: Math.round(median(loads.map((l) => l.ms))),
      loadOnlyPeakRssMbMedian: median(loads.map((l) => l.rss)),
      startupMsMedian: Math.round(median(startups)),
      startupMs: startups.map(Math.round),
      idlePeakRssMbMedian: median(idleRss),
      loadPeakRssMb: maxRssMb(worker),
      loadFetchedByWorker: report.fetched,
      crawlFetched: JSON.parse(crawl.out).fetched,
    };
    console.error(`${mode}: ${JSON.stringify(results[mode])}`);
  }
} finally {
  web.child.kill('SIGTERM');
  await web.exited;
  for (const namespace of namespaces) await dropNamespace(namespace).catch((e) => console.error(`cleanup ${namespace}: ${e.message}`));
  rmSync(tmp, { recursive: true, force: true });
}
console.log(JSON.stringify({ node: process.version, runs: RUNS, ...results }, null, 2));
