import { ManualClock } from '@trawl/core';
import { testDatabase } from '@trawl/db/testing';
import { Frontier } from '@trawl/frontier';
import { createRedis, deleteByPrefix, type Redis } from '@trawl/redis';
import { LuaBloomFilter } from '@trawl/seen';
import { fingerprint } from '@trawl/url';
import { keyBytes } from './redis-memory.js';
import { fmt, machine, writeSection } from './report.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

/** URLs shaped like real ones: ~70–90 characters, 100 per host. */
function realisticUrls(n: number, perHost: number): { url: string; host: string }[] {
  return Array.from({ length: n }, (_, i) => {
    const host = `www.site-${Math.floor(i / perHost)}.example.com`;
    return { host, url: `https://${host}/articles/2026/11/section-${i % 17}/a-fairly-typical-slug-${i}?page=${i % 5}` };
  });
}

export async function memoryBench(): Promise<void> {
  const redis = createRedis(REDIS_URL, { name: 'trawl-bench-memory' });
  const prefix = `bench-mem-${process.pid}`;
  try {
    const version = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
    const rows: (string | number)[][] = [];

    // Frontier: 100,000 queued URLs on 1,000 hosts.
    const N = 100_000;
    const urls = realisticUrls(N, 100);
    const avgLen = urls.reduce((s, u) => s + u.url.length, 0) / N;
    const frontier = new Frontier(redis, { prefix: `${prefix}-f`, partitions: 1, bands: 4, leaseMs: 60_000, fetchHoldMs: 60_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock: new ManualClock() });
    const before = await usedMemory(redis);
    for (let i = 0; i < N; i += 1000) {
      await frontier.push(urls.slice(i, i + 1000).map((u) => ({ ...u, depth: 1, hops: 0, flags: 0, priority: 0.5 })));
    }
    const after = await usedMemory(redis);
    const frontierKeys = await keyBytes(redis, `${prefix}-f`);
    rows.push(['frontier: queued URL (100,000 URLs, 1,000 hosts)', fmt(frontierKeys.bytes / N, 1), fmt((after - before) / N, 1), `${frontierKeys.keys} keys; mean URL ${fmt(avgLen)} chars`]);

    // Seen-set: the Lua bitmap Bloom filter at its design load.
    for (const capacity of [1_000_000]) {
      const bloom = new LuaBloomFilter(redis, { prefix: `${prefix}-s${capacity}`, capacity, errorRate: 0.01, shards: 1 });
      for (let i = 0; i < capacity; i += 5000) {
        await bloom.addIfNew(Array.from({ length: 5000 }, (_, j) => fingerprint(`https://h${(i + j) % 997}.example/${i + j}`)));
      }
      const info = await bloom.info();
      rows.push([`seen-set Bloom (Lua bitmap), ${fmt(capacity)} URLs at 1 %`, fmt(info.bytes / info.items, 2), '', `${fmt(info.bytes / 2 ** 20, 2)} MiB for ${fmt(info.items)} URLs; ${info.layers} layer(s)`]);
      await bloom.clear();
    }

    // The exact half of the seen-set: PostgreSQL urls rows.
    const { db, schema, cleanup } = await testDatabase('benchmem');
    try {
      for (let i = 0; i < N; i += 5000) {
        await db.insertDiscovered(urls.slice(i, i + 5000).map((u) => ({ hash: fingerprint(u.url), url: u.url, host: u.host, depth: 1, from: null })));
      }
      await db.pool.query(`VACUUM ANALYZE "${schema}".urls`);
      const { rows: size } = await db.pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('"${schema}".urls') AS bytes`);
      rows.push(['exact store: PostgreSQL urls row (table + indexes)', fmt(Number(size[0]?.bytes) / N, 1), '', '100,000 rows, on disk']);
    } finally {
      await cleanup();
    }

    const md = `## Memory per URL

Command: \`npm run bench -- memory\`. ${machine({ redis: version })}

| what | bytes per URL (MEMORY USAGE of the keys) | bytes per URL (used_memory delta) | notes |
|---|---|---|---|
${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}

How: the frontier figure pushes 100,000 URLs into a fresh namespace with \`Frontier.push\` and
sums \`MEMORY USAGE key SAMPLES 0\` over the namespace's keys (exact, unaffected by other clients);
the second column is the server's \`used_memory\` before/after (includes allocator overhead,
noisy if anything else runs). Each queued URL is one list entry "<depth> <hops> <flags> <url>" in
its host's back queue (listpack-encoded), plus a share of the host's hash and ready-heap entry.
The Bloom figure is bytes of the bitmap and its metadata divided by the URLs added at the
filter's design capacity (9.6 bits per URL at 1 %); the bitmap is allocated at full size on first
use, so a filter far below its capacity costs more per URL.`;
    writeSection('memory', md);
    console.log(md);
  } finally {
    await deleteByPrefix(redis, prefix);
    redis.disconnect();
  }
}
