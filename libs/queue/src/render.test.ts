import { testConnection, testRedis } from '@trawl/redis/testing';
import type { RedisClient } from '@trawl/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { type RenderJob, RenderQueue, renderStalledCheckMs, RenderWorker } from './render.js';

/**
 * The render queue against real Redis: a render stage killed mid-render (its BullMQ lock no longer
 * renewed) has its job handed to another within a lock and a third of the stalled check, not two.
 */
const t = testRedis('render-queue');
const connections = [testConnection({ blocking: true }), testConnection({ blocking: true })];
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await t.cleanup();
});

const JOB: RenderJob = { page: '{}', token: 'fetch-token', hostDueAt: 0, reason: 'empty-app-root', sample: false, addressSlots: [] };

describe('the render queue', () => {
  it('checks for lapsed locks every third of the lock (at least every 0.5 s)', () => {
    expect(renderStalledCheckMs(6000)).toBe(2000);
    expect(renderStalledCheckMs(30_000)).toBe(10_000);
    expect(renderStalledCheckMs(900)).toBe(500);
  });

  it('hands a killed render stage\'s job to another within a lock and a third of the kill', async () => {
    const namespace = `${t.prefix}:kill`;
    const lockMs = 1500;
    const queue = new RenderQueue(t.redis, namespace);
    const deliveries: Array<{ worker: string; at: number }> = [];
    let started!: () => void;
    const first = new Promise<void>((resolve) => (started = resolve));
    const victim = new RenderWorker(connections[0] as RedisClient, { namespace, concurrency: 1, lockMs }, async () => {
      deliveries.push({ worker: 'victim', at: Date.now() });
      started();
      return new Promise(() => undefined);
    });
    void victim.run();
    await victim.ready();
    await queue.add('p0-1:fetch-token', JOB);
    await first;
    // Killed: it stops renewing its lock and never finishes (closing with force abandons the job as it is).
    await victim.worker.close(true);
    const killedAt = Date.now();
    const survivor = new RenderWorker(connections[1] as RedisClient, { namespace, concurrency: 1, lockMs }, async () => {
      deliveries.push({ worker: 'survivor', at: Date.now() });
      return {};
    });
    void survivor.run();
    try {
      const end = Date.now() + 10 * lockMs;
      while (deliveries.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(deliveries.map((d) => d.worker)).toEqual(['victim', 'survivor']);
      // The lock lapses at most a lock after the kill; the check comes within a third of it after
      // that (the slack covers a loaded machine's timers, not another check period).
      expect((deliveries[1] as { at: number }).at - killedAt).toBeLessThan(lockMs + renderStalledCheckMs(lockMs) + 400);
    } finally {
      await survivor.close();
      await queue.queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
