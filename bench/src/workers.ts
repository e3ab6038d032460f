import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrivatePostgres, PrivateRedis, runCrawlProcesses, trawlRuntime, uniqueNamespace } from '@trawl/cli/testing';
import { loadConfig } from '@trawl/config';
import type { TestWeb} from '@trawl/testweb';
import { analyzeLog, type TestWebOptions } from '@trawl/testweb';
import { fmt, machine, median, table, writeSection } from './report.js';
import { postgresCpuMs, redisCpuMs } from './service-cpu.js';
import { type BenchProfile, profiledWeb, startBenchWeb } from './web-profile.js';

const PROCESSES = [1, 2, 4];
const HOSTS = Number(process.env.BENCH_WORKERS_HOSTS ?? 1000);
const PAGES_PER_HOST = 6;
/** The web on tiny pages; the realistic profile replaces its page size and latency. */
const TINY_WEB: TestWebOptions = { hosts: HOSTS, pagesPerHost: PAGES_PER_HOST, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 31 };
/** Mean response time of a real-internet fetch, for the latency bound of the sizing. */
const INTERNET_LATENCY_MS = 500;
const TARGETS = [1_000, 10_000];

interface Round {
  pages: number;
  /** From the first request the synthetic web saw to the end of its last response. */
  spanMs: number;
  /** The crawl's own: first dispatch to done. */
  durationMs: number;
  workerCpuMs: number;
  redisCpuMs: number;
  postgresCpuMs: number;
  /** This process: the synthetic web's server. */
  webCpuMs: number;
  missing: number;
  duplicates: number;
  violations: number;
}

async function oneRound(web: TestWeb, redis: PrivateRedis, pg: PrivatePostgres, processes: number, minDelayMs: number): Promise<Round> {
  web.clearLog();
  const namespace = uniqueNamespace('workers');
  const contentDir = mkdtempSync(join(tmpdir(), 'trawl-bench-workers-'));
  // Default settings but for what the benchmark must name: the servers, the namespace, the
  // synthetic web's loopback range, a content directory of its own.
  const env = {
    REDIS_URL: redis.url,
    DATABASE_URL: pg.url,
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_CONTENT_DIR: contentDir,
    TRAWL_LOG_LEVEL: 'warn',
  };
  const redisBefore = redisCpuMs(redis);
  const postgresBefore = postgresCpuMs(pg);
  const webBefore = process.cpuUsage();
  try {
    const { summary, reports } = await runCrawlProcesses(web.rootUrls(), env, processes);
    await web.idle();
    const webCpu = process.cpuUsage(webBefore);
    // The crawl's backends have exited with its processes: give the postmaster a moment to reap them.
    await new Promise((r) => setTimeout(r, 500));
    const analysis = analyzeLog(web.log, { minIntervalMs: minDelayMs, expected: web.groundTruth(web.rootUrls(), 'any') });
    const coverage = analysis.coverage;
    if (!coverage) throw new Error('no coverage analysis');
    const first = Math.min(...web.log.map((e) => e.start));
    const last = Math.max(...web.log.map((e) => e.end));
    return {
      pages: coverage.expected - coverage.missingCount,
      spanMs: last - first,
      durationMs: summary.durationMs,
      workerCpuMs: reports.reduce((s, r) => s + r.process.cpuMs, 0),
      redisCpuMs: redisCpuMs(redis) - redisBefore,
      postgresCpuMs: postgresCpuMs(pg) - postgresBefore,
      webCpuMs: (webCpu.user + webCpu.system) / 1000,
      missing: coverage.missingCount,
      duplicates: analysis.duplicates.extraFetches,
      violations: analysis.concurrency.violationCount + analysis.intervals.violationCount,
    };
  } finally {
    rmSync(contentDir, { recursive: true, force: true });
  }
}

interface Summary {
  processes: number;
  pagesPerSec: number;
  worker: number;
  redis: number;
  postgres: number;
  web: number;
  /** Cores busy on average over the crawl (all four parts' CPU ÷ the server log's span). */
  coresBusy: number;
  rounds: Round[];
}

function summarize(processes: number, rounds: Round[]): Summary {
  const m = (f: (r: Round) => number) => median(rounds.map(f));
  return {
    processes,
    rounds,
    pagesPerSec: m((r) => (r.pages * 1000) / r.spanMs),
    worker: m((r) => r.workerCpuMs / r.pages),
    redis: m((r) => r.redisCpuMs / r.pages),
    postgres: m((r) => r.postgresCpuMs / r.pages),
    web: m((r) => r.webCpuMs / r.pages),
    coresBusy: m((r) => (r.workerCpuMs + r.redisCpuMs + r.postgresCpuMs + r.webCpuMs) / r.spanMs),
  };
}

/**
 * The fleet for a target rate, from CPU per page and a worker process's rate (the lower of its
 * CPU bound and its concurrency bound).
 */
function fleet(target: number, perWorker: number, redisMs: number, postgresMs: number): { workers: number; redisCores: number; postgresCores: number } {
  return { workers: Math.ceil(target / perWorker), redisCores: (target * redisMs) / 1000, postgresCores: (target * postgresMs) / 1000 };
}

/** Pages/s with 1, 2 and 4 worker processes where politeness does not bind; CPU per page of each part; the sizing that follows. */
export async function workersBench(rounds: number, profile: BenchProfile): Promise<void> {
  const pages = profiledWeb('workers', TINY_WEB, profile);
  // A smaller web is for development: its figures are printed, BENCHMARKS.md is left alone.
  const development = process.env.BENCH_WORKERS_HOSTS !== undefined;
  const config = loadConfig({ env: {} });
  const minDelayMs = config.policy.minDelayMs;
  const concurrency = config.worker.concurrency;
  const redis = await PrivateRedis.start();
  const pg = await PrivatePostgres.start();
  const web = await startBenchWeb(pages.web);
  const summaries: Summary[] = [];
  try {
    for (const processes of PROCESSES) {
      const runs: Round[] = [];
      for (let r = 0; r < rounds; r += 1) {
        const run = await oneRound(web, redis, pg, processes, minDelayMs);
        runs.push(run);
        console.log(
          `${processes} process(es), round ${r + 1}: ${fmt((run.pages * 1000) / run.spanMs, 1)} pages/s, worker ${fmt(run.workerCpuMs / run.pages, 2)} ms/page, redis ${fmt(run.redisCpuMs / run.pages, 2)}, pg ${fmt(run.postgresCpuMs / run.pages, 2)}, web ${fmt(run.webCpuMs / run.pages, 2)}; missing/dup/violations ${run.missing}/${run.duplicates}/${run.violations}`,
        );
      }
      summaries.push(summarize(processes, runs));
    }
  } finally {
    await web.stop();
    await pg.stop();
    await redis.stop();
  }

  const cores = cpus().length;
  const rows = summaries.map((s) => [
    s.processes,
    fmt(s.pagesPerSec, 1),
    fmt(s.pagesPerSec / s.processes, 1),
    fmt(s.worker, 2),
    fmt(s.redis, 2),
    fmt(s.postgres, 2),
    fmt(s.web, 2),
    fmt(s.worker + s.redis + s.postgres + s.web, 2),
    `${fmt(s.coresBusy, 2)} of ${cores}`,
    s.rounds.map((r) => `${r.missing}/${r.duplicates}/${r.violations}`).join(' '),
  ]);

  // Sizing. CPU per page: the highest of the three runs (more processes cost more per page: smaller
  // batches, more consumers), so the figures are on the safe side.
  const one = summaries[0] as Summary;
  const best = summaries.reduce((a, b) => (b.pagesPerSec > a.pagesPerSec ? b : a));
  const workerMs = Math.max(...summaries.map((s) => s.worker));
  const redisMs = Math.max(...summaries.map((s) => s.redis));
  const postgresMs = Math.max(...summaries.map((s) => s.postgres));
  const cpuBound = 1000 / workerMs;
  const latencyBound = (concurrency * 1000) / INTERNET_LATENCY_MS;
  const perRedisCore = 1000 / redisMs;
  const perPostgresCore = 1000 / postgresMs;
  const sizing = (perWorker: number) =>
    TARGETS.map((target) => {
      const f = fleet(target, perWorker, redisMs, postgresMs);
      return [fmt(target), fmt(f.workers), fmt(f.redisCores, 2), fmt(Math.max(1, Math.ceil(f.redisCores))), fmt(f.postgresCores, 2)];
    });
  const sizingHeaders = ['pages/s', 'worker processes', 'Redis cores', 'Redis masters (1 core each)', 'PostgreSQL cores'];
  const speedup = (s: Summary) => s.pagesPerSec / one.pagesPerSec;
  const coresOf = (s: Summary, msPerPage: number) => (s.pagesPerSec * msPerPage) / 1000;

  const md = `## Workers: pages/s with 1, 2 and 4 processes, CPU per page, and sizing — ${pages.label}

Command: \`${pages.command}\`. ${machine({ 'trawl build': trawlRuntime() })}

Synthetic web: ${fmt(HOSTS)} hosts × ${PAGES_PER_HOST} pages (${pages.web.profile === undefined ? '4 intra-host and 2 cross-host links per page' : `${pages.web.profile.links.min}–${pages.web.profile.links.max} links per page, 2 of them cross-host`}, non-canonical
variants; pages: ${pages.label}), every host root a seed. Default settings (\`TRAWL_MIN_DELAY_MS\`=${minDelayMs},
\`TRAWL_CONCURRENCY\`=${concurrency}, ${config.partitions} partition, …): with ${fmt(HOSTS)} hosts the per-host delay allows up to
${fmt((HOSTS * 1000) / minDelayMs)} pages/s, far above what this machine reaches, so politeness does not bind (each host
still needs ≥ ${fmt(((PAGES_PER_HOST - 1) * minDelayMs) / 1000)} s: the tail). One process is \`trawl crawl\` (dispatcher + worker); N is \`trawl crawl\`
plus N−1 \`trawl worker\`s. A private \`redis-server\` (AOF, \`appendfsync everysec\`) and a private
PostgreSQL cluster (defaults but \`shared_buffers\` 32 MB; fsync on) serve only this crawl, so
their CPU is this crawl's: Redis from \`INFO cpu\` (\`used_cpu_user\` + \`used_cpu_sys\`), PostgreSQL
from \`/proc\` (utime + stime of the postmaster, its live children and its reaped backends).
Worker CPU: the trawl processes' own (start-up excluded); web: this process, which serves the
synthetic web. Pages: distinct pages of the
ground truth fetched, from the server's log; pages/s over the log's span (first request to last
response). Median of ${rounds} rounds, a fresh namespace each.

${table(['processes', 'pages/s', 'pages/s per process', 'worker CPU ms / page', 'Redis CPU ms / page', 'PostgreSQL CPU ms / page', 'web server CPU ms / page', 'total CPU ms / page', 'cores busy', 'missing/duplicate/politeness violations per round (server log)'], rows)}

Where the curve bends (CPU): ${summaries
    .slice(1)
    .map((s) => `${s.processes} processes give ×${fmt(speedup(s), 2)} the pages/s of one`)
    .join(', ')}.
This machine's ${cores} cores are shared by the crawler, Redis, PostgreSQL and the synthetic web.
With one process, the trawl process burns ${fmt(coresOf(one, one.worker), 2)} cores (${fmt(one.pagesPerSec, 1)} pages/s × ${fmt(one.worker, 2)} ms: its one JavaScript thread is its
limit) and Redis, PostgreSQL and the web ${fmt(coresOf(one, one.redis + one.postgres + one.web), 2)} more: ${fmt(one.coresBusy, 2)} of ${cores} cores busy, so a
second process still finds CPU. The peak is ${best.processes} process${best.processes > 1 ? 'es' : ''} (${fmt(best.pagesPerSec, 1)} pages/s, ${fmt(best.coresBusy, 2)} of ${cores} cores busy):
there the cores are spent, and more processes only share them, paying more worker CPU per page
for it (${summaries.map((s) => fmt(s.worker, 2)).join(' → ')} ms: each process gets less done per event-loop turn, so
batches shrink, and every process polls its queue). At the one-process cost of
${fmt(one.worker + one.redis + one.postgres + one.web, 2)} CPU ms per page in all, ${cores} cores carry at most ${fmt((cores * 1000) / (one.worker + one.redis + one.postgres + one.web))} pages/s.

### Sizing (computed from the table)

CPU per page, the highest of the three runs (on the safe side: a worker with a core to itself,
as in the one-process run, spends ${fmt(one.worker, 2)} ms): worker ${fmt(workerMs, 2)} ms, Redis ${fmt(redisMs, 2)} ms, PostgreSQL
${fmt(postgresMs, 2)} ms. So:

- a worker process on a core of its own fetches at most ${fmt(cpuBound)} pages/s (CPU bound, 1,000 ÷ ${fmt(workerMs, 2)};
  ${fmt(1000 / one.worker)} at the one-process ${fmt(one.worker, 2)} ms); measured here, one process sharing the machine
  fetched ${fmt(one.pagesPerSec, 1)} pages/s;
- one Redis core carries ${fmt(perRedisCore)} pages/s: ${fmt(perRedisCore / cpuBound, 1)} CPU-bound workers (${fmt(perRedisCore / one.pagesPerSec, 1)} at the measured
  ${fmt(one.pagesPerSec, 1)} pages/s each);
- one PostgreSQL core carries ${fmt(perPostgresCore)} pages/s: ${fmt(perPostgresCore / cpuBound, 1)} CPU-bound workers (${fmt(perPostgresCore / one.pagesPerSec, 1)} at the measured
  ${fmt(one.pagesPerSec, 1)} pages/s each).

On the real internet a worker is bound by concurrency × latency, not CPU: pages/s per worker ≈
\`TRAWL_CONCURRENCY\` ÷ mean response time = ${concurrency} ÷ ${fmt(INTERNET_LATENCY_MS / 1000, 1)} s = ${fmt(latencyBound)} pages/s at ${INTERNET_LATENCY_MS} ms, against
${fmt(cpuBound)} pages/s CPU-bound. A worker's rate is the lower of the two: ${fmt(Math.min(cpuBound, latencyBound))} pages/s (${latencyBound < cpuBound ? 'latency' : 'CPU'} binds).
Redis and PostgreSQL work per page does not depend on latency.

CPU-bound (synthetic web, ${fmt(cpuBound)} pages/s per worker):

${table(sizingHeaders, sizing(cpuBound))}

Real internet (${INTERNET_LATENCY_MS} ms mean response, ${fmt(Math.min(cpuBound, latencyBound))} pages/s per worker at the default concurrency):

${table(sizingHeaders, sizing(Math.min(cpuBound, latencyBound)))}

The usual estimate, 20–30 workers for 1,000 pages/s, assumes real-internet latency and a
concurrency of a few tens: it is the latency bound (${fmt(Math.ceil(1000 / latencyBound))} workers here at ${INTERNET_LATENCY_MS} ms; ${fmt(Math.ceil(1000 / ((concurrency * 1000) / 800)))} at 800 ms).
Raising \`TRAWL_CONCURRENCY\` moves a worker toward its CPU bound (${fmt(Math.ceil((cpuBound * INTERNET_LATENCY_MS) / 1000))} jobs at ${INTERNET_LATENCY_MS} ms). Cores
are at 100 %: plan headroom. Redis masters: a master is one core (Redis runs commands on one
thread); spread \`TRAWL_PARTITIONS\` and \`TRAWL_SEEN_SHARDS\` over them.`;
  if (!development) writeSection(pages.sectionId, md);
  console.log(md);
}
