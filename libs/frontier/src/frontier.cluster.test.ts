import { ManualClock } from '@trawl/core';
import { scanKeys } from '@trawl/redis';
import { testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { Frontier } from './frontier.js';

// Runs in the redis-cluster test project (the frontier's own suite runs there too). The scripts
// build per-host keys (`<base>h:<host>`, `<base>q:<host>:<band>`, `<base>v:<host>`, `<base>in:<host>`) from the
// partition's key base instead of declaring them; this checks that they land in the slot of the
// partition's declared keys, and that partitions spread over the masters.
const t = testRedis('frontier-cluster');
afterAll(() => t.cleanup());

describe('the frontier on a Redis Cluster', () => {
  it('keeps each partition in one slot, keys built inside scripts included, and spreads partitions over the masters', async () => {
    const clock = new ManualClock(1_000_000);
    const partitions = 6;
    const rank = { leadMs: 10_000, window: 4, weights: { authority: 1, seed: 1 } };
    const f = new Frontier(t.redis, { prefix: t.prefix, partitions, bands: 2, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, rank, clock });
    const hosts = Array.from({ length: 60 }, (_, i) => `host${i}.example`);
    await f.push(
      hosts.flatMap((host) => [1, 2].map((n) => ({ host, url: `http://${host}/${n}?q=${n}`, depth: 0, hops: 0, flags: 0, priority: 0.5, variantKey: `${host}/` }))),
      { maxQueryVariants: 10 },
    );
    // Host rank's keys (`<base>in:<host>`, the `seed` field) are built inside scripts too.
    await f.noteHosts(hosts.flatMap((host, i) => [{ host, seedPriority: (i % 10) / 10 }, { host, linkedFrom: `linker${i % 7}.example` }]));
    for (let p = 0; p < partitions; p += 1) {
      for (const lease of (await f.claim(p, 100)).leases) {
        const ticket = { partition: p, host: lease.host, leaseId: lease.id, token: 'x', band: lease.band, entry: lease };
        expect((await f.acquire(ticket)).kind).toBe('ok');
        await f.release(ticket, clock.now() + 10);
      }
    }

    const nodeOfPartition = new Map<number, string>();
    for await (const { node, keys } of scanKeys(t.redis, `${t.prefix}:*`)) {
      for (const key of keys) {
        const p = Number(/:\{p(\d+)\}:/.exec(key)?.[1]);
        expect(Number.isInteger(p), key).toBe(true);
        expect(Number(await t.redis.call('CLUSTER', 'KEYSLOT', key)), key).toBe(Number(await t.redis.call('CLUSTER', 'KEYSLOT', `{p${p}}`)));
        const where = `${node.options.port}`;
        expect(nodeOfPartition.get(p) ?? where, key).toBe(where);
        nodeOfPartition.set(p, where);
      }
    }
    expect(nodeOfPartition.size).toBe(partitions);
    expect(new Set(nodeOfPartition.values()).size).toBeGreaterThan(1);

    const stats = await f.stats();
    expect(stats.queued).toBe(60);
    expect(stats.partitions.filter((p) => p.hostsWaiting > 0).length).toBe(partitions);
  });
});
