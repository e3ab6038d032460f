import { dropNamespace, REDIS_URL, runCrawlProcesses, trawlRuntime, uniqueNamespace } from '@trawl/cli/testing';
import { createRedis, type Redis } from '@trawl/redis';
import type { TestWeb } from '@trawl/testweb';
import { analyzeLog } from '@trawl/testweb';
import { keyBytes } from './redis-memory.js';
import { fmt, machine, table, writeSection } from './report.js';
import { type BenchProfile, profiledWeb, startBenchWeb } from './web-profile.js';

const HOSTS = Number(process.env.BENCH_SPILL_HOSTS ?? 100);
const PAGES = Number(process.env.BENCH_SPILL_PAGES ?? 100);
const CAP = Number(process.env.BENCH_SPILL_CAP ?? 500);
const HEAD = Number(process.env.BENCH_SPILL_HEAD ?? 4);
const DELAY_MS = 50;
const PARTITIONS = 4;

interface Run {
  label: string;
  pagesPerSec: number;
  durationS: number;
  pages: number;
  /** Peaks over the crawl, sampled every 250 ms. */
  peakFrontierBytes: number;
  /** Of it, the hosts' back queues alone (`<ns>:{p<n>}:q:*`). */
  peakQueueBytes: number;
  peakQueued: number;
  peakSpilled: number;
  violations: number;
  duplicates: number;
  missing: number;
}

/** The frontier's queued and spilled counters, summed over partitions. */
async function counts(redis: Redis, namespace: string): Promise<{ queued: number; spilled: number }> {
  let queued = 0;
  let spilled = 0;
  for (let p = 0; p < PARTITIONS; p += 1) {
    const [q, s] = await redis.hmget(`${namespace}:{p${p}}:stats`, 'queued', 'spilled');
    queued += Number(q ?? 0);
    spilled += Number(s ?? 0);
  }
  return { queued, spilled };
}

async function oneRun(web: TestWeb, redis: Redis, label: string, extra: Record<string, string>): Promise<Run> {
  web.clearLog();
  const namespace = uniqueNamespace('bench_spill');
  const env = {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_MIN_DELAY_MS: String(DELAY_MS),
    TRAWL_CONCURRENCY: '32',
    TRAWL_PARTITIONS: String(PARTITIONS),
    TRAWL_RECRAWL: 'false',
    TRAWL_CONTENT_DIR: `.trawl/bench-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
    ...extra,
  };
  const peaks = { bytes: 0, queueBytes: 0, queued: 0, spilled: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      // Every key of the frontier's partitions: back queues, host hashes, ready heaps, leases, streams.
      const [{ bytes }, { queued, spilled }, ...queues] = await Promise.all([
        keyBytes(redis, `${namespace}:{p`),
        counts(redis, namespace),
        ...Array.from({ length: PARTITIONS }, (_, p) => keyBytes(redis, `${namespace}:{p${p}}:q:`)),
      ]);
      peaks.bytes = Math.max(peaks.bytes, bytes);
      peaks.queueBytes = Math.max(peaks.queueBytes, queues.reduce((sum, q) => sum + q.bytes, 0));
      peaks.queued = Math.max(peaks.queued, queued);
      peaks.spilled = Math.max(peaks.spilled, spilled);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  try {
    const { summary } = await runCrawlProcesses(web.rootUrls(), env, 1);
    await web.idle();
    const analysis = analyzeLog(web.log, { minIntervalMs: DELAY_MS, expected: web.groundTruth(web.rootUrls(), 'any') });
    return {
      label,
      pages: summary.fetched,
      durationS: summary.durationMs / 1000,
      pagesPerSec: (summary.fetched * 1000) / summary.durationMs,
      peakFrontierBytes: peaks.bytes,
      peakQueueBytes: peaks.queueBytes,
      peakQueued: peaks.queued,
      peakSpilled: peaks.spilled,
      violations: analysis.concurrency.violationCount + analysis.intervals.violationCount,
      duplicates: analysis.duplicates.extraFetches,
      missing: analysis.coverage?.missingCount ?? -1,
    };
  } finally {
    sampling = false;
    await sampler;
    await dropNamespace(namespace);
  }
}

/**
 * A crawl of a 100 × 100 synthetic web (10,000 pages) with the frontier uncapped and capped in
 * Redis (TRAWL_FRONTIER_REDIS_MAX_URLS): the frontier's Redis memory at its peak, and pages/s.
 */
export async function spillBench(profile: BenchProfile): Promise<void> {
  const started = Date.now();
  const shape = profiledWeb('spill', { hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 13 }, profile, { maxLatencyMs: DELAY_MS });
  const web = await startBenchWeb(shape.web);
  const redis = createRedis(REDIS_URL, { name: 'trawl-bench-spill' });
  const runs: Run[] = [];
  try {
    for (const [label, extra] of [
      ['no cap (every queued URL in Redis)', {}],
      [`TRAWL_FRONTIER_REDIS_MAX_URLS=${CAP}, TRAWL_FRONTIER_HOST_HEAD_URLS=${HEAD}`, { TRAWL_FRONTIER_REDIS_MAX_URLS: String(CAP), TRAWL_FRONTIER_HOST_HEAD_URLS: String(HEAD) }],
    ] as const) {
      runs.push(await oneRun(web, redis, label, extra));
      const r = runs.at(-1) as Run;
      console.log(`${label}: ${fmt(r.pagesPerSec, 1)} pages/s, peak frontier ${fmt(r.peakFrontierBytes / 1024)} KiB, peak queued ${r.peakQueued}, peak spilled ${r.peakSpilled}`);
    }
  } finally {
    await web.stop();
    redis.disconnect();
  }
  const md = `## A frontier larger than its Redis cap: ${fmt(HOSTS * PAGES)} pages — ${shape.label}

Command: \`${shape.command}\`. ${machine({ 'trawl build': trawlRuntime() })} · pages: ${shape.label}

One \`trawl crawl\` process (TRAWL_CONCURRENCY=32, ${PARTITIONS} partitions, TRAWL_MIN_DELAY_MS=${DELAY_MS},
re-crawl off) of a ${HOSTS} × ${PAGES} synthetic web on the shared Redis and PostgreSQL, once with the
frontier uncapped and once capped. Every 250 ms the benchmark sums MEMORY USAGE over every key of
the crawl's frontier partitions (\`<ns>:{p<n>}:*\`: back queues, host hashes, ready heaps, leases,
the process streams of fetched pages waiting to be parsed) and over the back queues alone
(\`<ns>:{p<n>}:q:*\`), and reads the queued and spilled counters; the table gives each one's peak
(not necessarily at the same moment). Judged from the web's request log.

${table(
  ['frontier', 'pages', 'wall s', 'pages/s', 'peak frontier memory (KiB)', 'of it, back queues (KiB)', 'peak queued in Redis', 'peak spilled to PostgreSQL', 'politeness violations', 'fetched twice', 'missing'],
  runs.map((r) => [r.label, fmt(r.pages), fmt(r.durationS, 1), fmt(r.pagesPerSec, 1), fmt(r.peakFrontierBytes / 1024), fmt(r.peakQueueBytes / 1024), fmt(r.peakQueued), fmt(r.peakSpilled), r.violations, r.duplicates, r.missing]),
)}

The benchmark took ${fmt((Date.now() - started) / 1000)} s.`;
  writeSection(shape.sectionId, md);
  console.log(md);
}
