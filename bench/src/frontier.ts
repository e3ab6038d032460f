import { PrivateRedis } from '@trawl/cli/testing';
import { loadConfig } from '@trawl/config';
import { ManualClock } from '@trawl/core';
import { Frontier, type PushItem } from '@trawl/frontier';
import { createRedis, type Redis } from '@trawl/redis';
import { frontierOptions } from '@trawl/runtime';
import { keyBytes } from './redis-memory.js';
import { fmt, machine, table, writeSection } from './report.js';

const URLS = Number(process.env.BENCH_FRONTIER_URLS ?? 1_000_000);
const HOSTS = Number(process.env.BENCH_FRONTIER_HOSTS ?? 10_000);
/** Fill levels (queued URLs) at which claims are timed; the last is the full frontier. */
const LEVELS = [10_000, 100_000, 500_000, 1_000_000].map((n) => Math.round((n * URLS) / 1_000_000));
const CLAIMS = Number(process.env.BENCH_FRONTIER_CLAIMS ?? 200);
/** The URLs one `Frontier.push` call carries (the script's own chunk size). */
const PUSH_BATCH = 1000;

async function info(redis: Redis, section: string, field: string): Promise<number> {
  return Number(new RegExp(`${field}:([\\d.]+)`).exec(await redis.info(section))?.[1] ?? 0);
}

/** Redis's own CPU (user + system, all threads) in ms. */
async function redisCpuMs(redis: Redis): Promise<number> {
  return ((await info(redis, 'cpu', 'used_cpu_user')) + (await info(redis, 'cpu', 'used_cpu_sys'))) * 1000;
}

/**
 * URL i of the frontier: shaped like memory.ts's (~90 characters), but hosts taken in turn, so
 * every fill level spreads over all hosts (10,000 queued URLs = one per host), as a broad crawl's
 * frontier does.
 */
function urlItem(i: number): PushItem {
  const host = `www.site-${i % HOSTS}.example.com`;
  return { host, url: `https://${host}/articles/2026/11/section-${i % 17}/a-fairly-typical-slug-${i}?page=${i % 5}`, depth: 1, hops: 0, flags: 0, priority: 0.5 };
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;

interface ClaimTiming {
  batch: number;
  p50: number;
  p99: number;
  max: number;
  claimed: number;
}

/**
 * Times `claims` calls of `Frontier.claim` (the dispatcher's call, with its lead) of `batch` hosts
 * each; after each, the claimed leases go back with `Frontier.requeue` (untimed), so the level
 * stays put. The clock moves on 1 ms per claim: requeued hosts go to the back of the ready heap,
 * and successive claims walk through the hosts as a running crawl's do.
 */
async function timeClaims(frontier: Frontier, clock: ManualClock, batch: number, leadMs: number, hosts: number): Promise<ClaimTiming> {
  const times: number[] = [];
  let claimed = 0;
  for (let i = 0; i < CLAIMS; i += 1) {
    clock.advance(1);
    const start = performance.now();
    const result = await frontier.claim(0, batch, { leadMs });
    times.push(performance.now() - start);
    if (result.leases.length !== Math.min(batch, hosts)) throw new Error(`claim of ${batch} got ${result.leases.length} leases`);
    claimed += result.leases.length;
    await frontier.requeue(
      0,
      result.leases.map((l) => l.id),
    );
  }
  times.sort((a, b) => a - b);
  return { batch, p50: percentile(times, 0.5), p99: percentile(times, 0.99), max: times.at(-1) as number, claimed };
}

/** A 1,000,000-URL frontier over 10,000 hosts: memory per queued URL, push cost, and claim latency as it fills. */
export async function frontierBench(): Promise<void> {
  const started = Date.now();
  const server = await PrivateRedis.start();
  const redis = createRedis(server.url, { name: 'trawl-bench-frontier' });
  const config = loadConfig({ env: {} });
  const prefix = 'benchfrontier';
  const clock = new ManualClock();
  // The runtime's own options (libs/runtime), at their defaults; one partition, as by default.
  const frontier = new Frontier(redis, frontierOptions(config, prefix, clock));
  const batches = [...new Set([32, config.dispatch.window])];
  try {
    const version = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
    await frontier.markLive();
    const baseMemory = await info(redis, 'memory', 'used_memory');
    const rows: (string | number)[][] = [];
    const p50s: number[][] = [];
    let pushed = 0;
    let pushMs = 0;
    let pushRedisMs = 0;
    let chars = 0;
    for (const level of LEVELS) {
      const levelStart = pushed;
      const cpuBefore = await redisCpuMs(redis);
      const t0 = performance.now();
      while (pushed < level) {
        const n = Math.min(PUSH_BATCH, level - pushed);
        const items = Array.from({ length: n }, (_, j) => urlItem(pushed + j));
        for (const item of items) chars += item.url.length;
        const result = await frontier.push(items);
        if (result.pushed !== n) throw new Error(`pushed ${result.pushed} of ${n}`);
        pushed += n;
      }
      const levelPushMs = performance.now() - t0;
      pushMs += levelPushMs;
      pushRedisMs += (await redisCpuMs(redis)) - cpuBefore;
      const stats = await frontier.stats();
      if (stats.queued !== level) throw new Error(`frontier holds ${stats.queued} URLs, expected ${level}`);
      const keys = await keyBytes(redis, prefix);
      const usedDelta = (await info(redis, 'memory', 'used_memory')) - baseMemory;
      const timings: ClaimTiming[] = [];
      for (const batch of batches) timings.push(await timeClaims(frontier, clock, batch, config.dispatch.leadMs, Math.min(level, HOSTS)));
      p50s.push(timings.map((t) => t.p50));
      // Requeued leases leave tombstones (a day's worth, for jobs that might still turn up); this
      // benchmark has no jobs, and they would count as frontier memory at the next level.
      await redis.del(frontier.keysOf(0).tombstones);
      if ((await frontier.stats()).queued !== level) throw new Error('claims changed the level');
      rows.push([
        fmt(level),
        fmt(Math.min(level, HOSTS)),
        fmt(keys.bytes / level, 1),
        fmt(usedDelta / level, 1),
        fmt(((levelPushMs / (level - levelStart)) * 1000), 1),
        ...timings.map((t) => `${fmt(t.p50, 2)} / ${fmt(t.p99, 2)} (max ${fmt(t.max, 1)})`),
      ]);
      console.log(`level ${fmt(level)}: ${rows.at(-1)?.join(' | ')}`);
    }
    const elapsedS = (Date.now() - started) / 1000;
    const window = batches.length - 1;
    const fullP50 = (p50s.at(-1) as number[])[window] as number;
    const growth = Math.max(...batches.map((_, i) => ((p50s.at(-1) as number[])[i] as number) / ((p50s[0] as number[])[i] as number)));
    const md = `## Frontier at scale: ${fmt(URLS)} URLs over ${fmt(HOSTS)} hosts

Command: \`npm run bench -- frontier\`. ${machine({ redis: version })}

A private \`redis-server\` (the durability docs/operations.md asks for: AOF, \`appendfsync everysec\`,
\`noeviction\`), one frontier with the runtime's default options (${config.partitions} partition, ${config.dispatch.bands} bands);
the benchmark's clock moves 1 ms per claim, so every host is due (\`TRAWL_MIN_DELAY_MS\` does not
enter). URLs are pushed with \`Frontier.push\`, ${fmt(PUSH_BATCH)} per call, hosts in turn (URL i on host i mod ${fmt(HOSTS)}; mean URL
${fmt(chars / pushed)} characters). At each fill level: memory per queued URL, then ${CLAIMS} calls of
\`Frontier.claim\` (the \`claimReady\` script the dispatcher runs each tick, with its
\`TRAWL_DISPATCH_LEAD_MS\`) of ${batches.join(' and ')} hosts (${batches[0]}: a steady tick's refill, about
one worker's \`TRAWL_CONCURRENCY\`; ${batches.at(-1)}: a full \`TRAWL_DISPATCH_WINDOW\`). After each claim its leases
go back with \`Frontier.requeue\` (not timed), so the level stays put. Latency is the client's
round trip over loopback.

${table(
  [
    'queued URLs',
    'hosts',
    'bytes / URL (MEMORY USAGE)',
    'bytes / URL (used_memory Δ)',
    'push µs / URL (this level\'s pushes)',
    ...batches.map((b) => `claim ${b} hosts: ms p50 / p99`),
  ],
  rows,
)}

Push, all ${fmt(pushed)} URLs: ${fmt((pushMs / pushed) * 1000, 1)} µs per URL wall time (${fmt((pushed / pushMs) * 1000)} URLs/s from one client,
one call in flight), of which Redis CPU ${fmt((pushRedisMs / pushed) * 1000, 1)} µs per URL. The benchmark took ${fmt(elapsedS)} s.

Memory per URL falls as hosts fill: a host's hash and ready-heap entry are shared by its URLs
(at ${fmt(LEVELS[0] as number)} URLs a host holds ${fmt((LEVELS[0] as number) / HOSTS, (LEVELS[0] as number) < HOSTS ? 1 : 0)}; at ${fmt(URLS)}, ${fmt(URLS / HOSTS)}, in its back queue, a
listpack-encoded list). A claim's work is its batch (one \`LPOP\` and lease per host) plus a
\`ZRANGEBYSCORE\` on the ready heap (logarithmic in the hosts); the depth of the queues behind
the hosts enters only through the size of the data. From ${fmt(LEVELS[0] as number)} to ${fmt(URLS)} queued URLs
(${fmt(URLS / (LEVELS[0] as number))} times as many) the p50 goes ${batches.map((b, i) => `${p50s.map((p) => fmt(p[i] as number, 2)).join(' → ')} ms (${b} hosts)`).join(', ')}:
×${fmt(growth, 1)} at most. The p99 is noisier (this machine is shared with other work). At the full
frontier a ${batches[window]}-host claim costs ${fmt((fullP50 / (batches[window] as number)) * 1000, 1)} µs per URL, round trip included: one partition's
dispatcher hands out up to ~${fmt(Math.round((batches[window] as number) / fullP50) * 1000)} URLs/s.`;
    writeSection('frontier', md);
    console.log(md);
  } finally {
    redis.disconnect();
    await server.stop();
  }
}
