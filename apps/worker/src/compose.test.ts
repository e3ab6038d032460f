import { randomBytes } from 'node:crypto';
import { loadConfig } from '@trawl/config';
import type { RenderQueue } from '@trawl/queue';
import { Runtime } from '@trawl/runtime';
import { dropNamespace } from '@trawl/runtime/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { createCrawlWorker } from './compose.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const namespace = `t_compose_${randomBytes(4).toString('hex')}`;

afterAll(async () => {
  await dropNamespace(namespace, { redisUrl: REDIS_URL, databaseUrl: DATABASE_URL });
});

describe('a fetch stage\'s connections', () => {
  // ioredis copies every script defined on a connection into each pipeline it builds, and an
  // auto-pipelined connection builds one per batch of commands: BullMQ's 64 scripts on the
  // runtime's connection cost every gate, release and hand-off that copy.
  it('keeps BullMQ\'s scripts off the runtime\'s auto-pipelined connection', async () => {
    const config = loadConfig({ env: { TRAWL_NAMESPACE: namespace, TRAWL_PROCESS_THREAD: 'false' } });
    const runtime = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
    try {
      const stages = createCrawlWorker(runtime, { concurrency: 1, roles: ['fetch'] });
      const handOver = stages.fetch?.deps.renderHandOver;
      expect(handOver).toBeDefined();
      // The render queue (the fetch stage's one BullMQ producer of its own) has loaded its scripts.
      await (handOver?.queue as RenderQueue).queue.waitUntilReady();
      stages.start();
      await stages.ready();
      expect(Object.keys(runtime.queueRedis.scriptsSet).length).toBeGreaterThan(0);
      expect(Object.keys(runtime.redis.scriptsSet)).toEqual([]);
      expect(await stages.stop(5_000)).toEqual({ drained: true });
    } finally {
      await runtime.close();
    }
  });
});
