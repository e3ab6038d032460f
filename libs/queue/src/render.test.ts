import { testConnection, testRedis } from '@trawl/redis/testing';
import type { RedisClient } from '@trawl/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { type RenderDelivery, type RenderJob, RenderLater, RenderQueue, renderStalledCheckMs, RenderWorker } from './render.js';

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

  it('a job that must wait (RenderLater) waits until then as often as it asks, without using up its tries', async () => {
    const namespace = `${t.prefix}:later`;
    const queue = new RenderQueue(t.redis, namespace);
    const deliveries: Array<RenderDelivery & { at: number }> = [];
    const asked: number[] = [];
    const worker = new RenderWorker(connections[0] as RedisClient, { namespace, concurrency: 1, lockMs: 5000 }, async (_job, delivery) => {
      deliveries.push({ ...delivery, at: Date.now() });
      // More waits than the job has tries (5).
      if (deliveries.length <= 7) {
        const at = Date.now() + 100;
        asked.push(at);
        throw new RenderLater(at, 'the host is busy');
      }
      return { done: true };
    });
    void worker.run();
    try {
      await worker.ready();
      await queue.add('p0-2:fetch-token', JOB);
      const end = Date.now() + 20_000;
      let state = '';
      while (Date.now() < end && (state = await queue.queue.getJobState('p0-2_fetch-token')) !== 'completed' && state !== 'failed') await new Promise((r) => setTimeout(r, 50));
      expect(state).toBe('completed');
      expect(deliveries).toHaveLength(8);
      // Every delivery is the first try of five: the waits counted none.
      expect(deliveries.map((d) => [d.attempt, d.maxAttempts])).toEqual(Array.from({ length: 8 }, () => [1, 5]));
      // Each came no sooner than the time the one before asked for.
      for (let i = 1; i < deliveries.length; i += 1) expect((deliveries[i] as { at: number }).at).toBeGreaterThanOrEqual((asked[i - 1] as number) - 5);
    } finally {
      await worker.close();
      await queue.queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
