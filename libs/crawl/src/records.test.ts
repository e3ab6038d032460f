import { systemClock } from '@trawl/core';
import { fp, record, testDatabase } from '@trawl/db/testing';
import { Frontier, type Lease } from '@trawl/frontier';
import { testRedis } from '@trawl/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Records } from './records.js';

/**
 * A record and its lease's ack travel together: `Records` writes a batch to PostgreSQL and only
 * then acknowledges the leases of the rows written, one ack call per partition per batch (real
 * PostgreSQL, real frontier scripts).
 */
const t = testRedis('records');
let db: Awaited<ReturnType<typeof testDatabase>>;
let n = 0;

beforeAll(async () => {
  db = await testDatabase('records');
});

afterAll(async () => {
  await db.cleanup();
  await t.cleanup();
});

async function setup(hosts: string[]) {
  const frontier = new Frontier(t.redis, { prefix: `${t.prefix}r${(n += 1)}`, partitions: 2, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock: systemClock });
  await frontier.push(hosts.map((host) => ({ url: `http://${host}/`, host, depth: 0, hops: 0, flags: 0, priority: 0.5 })));
  const leases: Lease[] = [];
  for (let p = 0; p < 2; p += 1) leases.push(...(await frontier.claim(p, 10)).leases);
  expect(leases).toHaveLength(hosts.length);
  // Each ack call, and which of its leases' pages were in PostgreSQL at that moment.
  const acks: { partition: number; ids: string[]; recorded: number }[] = [];
  const acker = {
    ack: async (partition: number, ids: readonly string[]) => {
      const urls = ids.map((id) => (leases.find((l) => l.id === id) as Lease).url);
      const { rows } = await db.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${db.schema}".crawled_pages WHERE url_hash = ANY($1::bytea[])`, [urls.map(fp)]);
      acks.push({ partition, ids: [...ids], recorded: Number(rows[0]?.n) });
      return frontier.ack(partition, ids);
    },
  };
  const records = new Records(db.db, async () => null, acker, { maxBatch: 500, maxWaitMs: 20 });
  return { frontier, leases, acks, records };
}

describe('Records: the record, then its lease acknowledged, in one flush', () => {
  it('acknowledges a batch\'s leases once their rows are written, one call per partition', async () => {
    const hosts = Array.from({ length: 8 }, (_, i) => `rec${n}-${i}.example`);
    const { frontier, leases, acks, records } = await setup(hosts);
    const partitions = new Set(leases.map((l) => l.partition));
    expect(partitions.size).toBe(2); // the hosts are spread over both partitions
    const results = await Promise.all(leases.map((l) => records.add(record(l.url), { partition: l.partition, leaseId: l.id })));
    expect(results).toEqual(leases.map(() => null));
    expect(acks).toHaveLength(2);
    for (const call of acks) expect(call.recorded).toBe(call.ids.length);
    expect(acks.flatMap((a) => a.ids).sort()).toEqual(leases.map((l) => l.id).sort());
    const stats = await frontier.stats();
    expect(stats).toMatchObject({ leased: 0, done: leases.length });
  });

  it('leaves the lease of a record PostgreSQL refuses alone, and acknowledges the rest of the batch', async () => {
    const { frontier, leases, acks, records } = await setup([`refused${n}.example`, `fine${n}.example`]);
    const [bad, good] = leases as [Lease, Lease];
    const [refused, written] = await Promise.all([
      records.add(record(bad.url, { httpStatus: 99_999 }), { partition: bad.partition, leaseId: bad.id }),
      records.add(record(good.url), { partition: good.partition, leaseId: good.id }),
    ]);
    expect(refused).toMatch(/^ERR_DATABASE: PostgreSQL refused the row/);
    expect(written).toBeNull();
    expect(acks.flatMap((a) => a.ids)).toEqual([good.id]);
    expect(await frontier.stats()).toMatchObject({ leased: 1, done: 1 });
    // A record given no lease acknowledges nothing.
    expect(await records.add(record(`http://nolease${n}.example/`))).toBeNull();
    expect(acks.flatMap((a) => a.ids)).toEqual([good.id]);
  });
});
