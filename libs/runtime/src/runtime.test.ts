import { randomBytes } from 'node:crypto';
import { loadConfig } from '@trawl/config';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { Runtime } from './runtime.js';
import { dropNamespace } from './testing/index.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const namespaces: string[] = [];

afterAll(async () => {
  for (const namespace of namespaces) await dropNamespace(namespace, { redisUrl: REDIS_URL, databaseUrl: DATABASE_URL });
});

async function open(role: string): Promise<Runtime> {
  const namespace = `t_runtime_${randomBytes(4).toString('hex')}`;
  namespaces.push(namespace);
  const config = loadConfig({ env: { TRAWL_NAMESPACE: namespace, TRAWL_SEEN_CAPACITY: '200000' } });
  return Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role });
}

describe('the seen-set as a crawl\'s processes start', () => {
  it('is created at full size by a process that adds to it, again after a wipe, and not by one that only reads', async () => {
    const worker = await open('worker');
    try {
      // ~1.2 bytes an item at 1 %: allocated before the first link is discovered.
      expect(await worker.seen.bloom.info()).toMatchObject({ items: 0, layers: 1 });
      expect((await worker.seen.bloom.info()).bytes).toBeGreaterThan(200_000);
      await worker.wipe();
      expect((await worker.seen.bloom.info()).bytes).toBeGreaterThan(200_000);
    } finally {
      await worker.close();
    }
    const dashboard = await open('dashboard');
    try {
      expect(await dashboard.seen.bloom.info()).toMatchObject({ items: 0, layers: 0 });
    } finally {
      await dashboard.close();
    }
  });
});
