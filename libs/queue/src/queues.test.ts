import { testConnection, testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFetchJob, type FetchJob, type FetchJobContext, type JobResult } from './job.js';
import { FETCH_EVENTS_MAX_LEN, FetchQueues, FetchWorker, forgetHeldFetchJobs, heldFetchJobs } from './queues.js';
import { ReadyJobs, readyKeys } from './ready.js';
import { openQueue } from './registry.js';
import { fetchQueueName, fetchQueuePrefix } from './job.js';

const t = testRedis('queue');
const blocking = testConnection({ blocking: true });
afterAll(async () => {
  blocking.disconnect();
  await t.cleanup();
});
let n = 0;

const job = (id: string, url = `http://h/${id}`): FetchJob => decodeFetchJob({ u: url, h: 'h', p: 0, d: 0, x: 0, f: 0, b: 0, l: id });

async function withWorker(
  attempts: number,
  handler: (ctx: FetchJobContext) => Promise<JobResult>,
  body: (queues: FetchQueues) => Promise<void>,
): Promise<void> {
  const namespace = `${t.prefix}q${(n += 1)}`;
  const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts });
  const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 4, stalledMs: 5000, jobs: queues.options }, handler);
  void worker.run();
  try {
    await body(queues);
  } finally {
    await worker.close();
    await queues.close();
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('FetchQueues and FetchWorker', () => {
  it('tells which jobs exist (the orphan sweep\'s question): on the ready list, taken, or in the BullMQ queue', async () => {
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 2, attempts: 1 });
    const ready = new ReadyJobs(t.redis, namespace);
    try {
      await queues.addLeased(1, [job('p1-1'), job('p1-2'), job('p1-3')]);
      // p1-2 taken by a consumer (still a job), p1-3 taken and over (no longer one).
      const taken = await ready.take(1, 'worker@h:1:aaaaaa|p1|c', null, 2);
      expect(taken.map((j) => j.id)).toEqual(['p1-1', 'p1-2']);
      await ready.finish(1, 'worker@h:1:aaaaaa|p1|c', 'p1-1', true);
      await queues.queue(1).add('fetch', { u: 'http://h/p1-5', h: 'h', p: 1, d: 0 }, { jobId: 'p1-5' });
      expect(await queues.jobsExist(1, ['p1-1', 'p1-2', 'p1-3', 'p1-4', 'p1-5'])).toEqual([false, true, true, false, true]);
      expect(await queues.jobsExist(0, ['p1-1'])).toEqual([false]);
      expect(await queues.jobsExist(1, [])).toEqual([]);
    } finally {
      await queues.close();
    }
  });

  it('keeps only a short event stream, and the dashboard opening the queue leaves that setting alone', async () => {
    await withWorker(1, async () => ({ outcome: 'done', summary: {} }), async (queues) => {
      const namespace = `${t.prefix}q${n}`;
      const base = `${fetchQueuePrefix(namespace, 0)}:${fetchQueueName(0)}`;
      await queues.queue(0).waitUntilReady();
      const inspected = openQueue(t.redis, { prefix: fetchQueuePrefix(namespace, 0), name: fetchQueueName(0) });
      await inspected.waitUntilReady();
      await inspected.close();
      // Jobs that went through BullMQ (deferred, retried, added by hand): the ready list's make no events.
      const ids = Array.from({ length: 600 }, (_, i) => `p0-${i + 1}`);
      await queues.queue(0).addBulk(ids.map((id) => ({ name: 'fetch', data: { u: `http://h/${id}`, h: 'h', p: 0, d: 0 }, opts: { jobId: id } })));
      await until(async () => ((await queues.counts()).completed ?? 0) >= 600, 20_000);
      expect(await t.redis.hget(`${base}:meta`, 'opts.maxLenEvents')).toBe(String(FETCH_EVENTS_MAX_LEN));
      // Four events per job (added, waiting, active, completed) would be 2 400; trimming is
      // approximate (whole stream nodes of 100 entries), so a little over the length stays.
      expect(await t.redis.xlen(`${base}:events`)).toBeLessThanOrEqual(3 * FETCH_EVENTS_MAX_LEN);
    });
  });

  it('completes done jobs, and one lease id makes one job', async () => {
    const seen: string[] = [];
    await withWorker(3, async (ctx) => {
      seen.push(ctx.job.url);
      return { outcome: 'done', summary: { ok: true } };
    }, async (queues) => {
      await queues.addLeased(0, [job('p0-1'), job('p0-1'), job('p0-2')]);
      await until(async () => (await queues.counts()).completed === 2);
      expect(seen.sort()).toEqual(['http://h/p0-1', 'http://h/p0-2']);
    });
  });

  it('defers without spending an attempt', async () => {
    const calls: { attempt: number; at: number }[] = [];
    await withWorker(1, async (ctx) => {
      calls.push({ attempt: ctx.attempt, at: Date.now() });
      if (calls.length === 1) return { outcome: 'defer', until: Date.now() + 300 };
      return { outcome: 'done', summary: {} };
    }, async (queues) => {
      await queues.addLeased(0, [job('p0-9')]);
      await until(async () => (await queues.counts()).completed === 1);
      expect(calls.map((c) => c.attempt)).toEqual([1, 1]);
      expect((calls[1] as { at: number }).at - (calls[0] as { at: number }).at).toBeGreaterThanOrEqual(290);
    });
  });

  it('a turn due soon is waited for in the worker, still held; one due later becomes a BullMQ delayed job', async () => {
    const runs: string[] = [];
    await withWorker(1, async (ctx) => {
      runs.push(ctx.id);
      if (ctx.id === 'p0-far') return { outcome: 'defer', until: Date.now() + 60_000 };
      return runs.filter((id) => id === ctx.id).length === 1 ? { outcome: 'defer', until: Date.now() + 300 } : { outcome: 'done', summary: {} };
    }, async (queues) => {
      await queues.addLeased(0, [job('p0-near'), job('p0-far')]);
      await until(async () => runs.length === 2);
      // Waiting in the worker: held (a job still), not in BullMQ.
      expect(await queues.queue(0).getJobState('p0-near')).toBe('unknown');
      expect(await queues.jobsExist(0, ['p0-near'])).toEqual([true]);
      await until(async () => (await queues.queue(0).getJobState('p0-far')) === 'delayed');
      await until(async () => runs.filter((id) => id === 'p0-near').length === 2);
      await until(async () => (await queues.jobsExist(0, ['p0-near']))[0] === false);
    });
  });

  it('a stopping worker gives its jobs waiting for their turn back to the ready list, for another to run', async () => {
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 1 });
    const first = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 2, stalledMs: 5000, jobs: queues.options }, async () => ({ outcome: 'defer', until: Date.now() + 20_000 }));
    const ran: string[] = [];
    const other = testConnection({ blocking: true });
    const second = new FetchWorker(other, { namespace, partition: 0, concurrency: 2, stalledMs: 5000, jobs: queues.options }, async (ctx) => {
      ran.push(ctx.id);
      return { outcome: 'done', summary: {} };
    });
    try {
      void first.run();
      await queues.addLeased(0, [job('p0-1'), job('p0-2')]);
      await until(async () => (await queues.waiting(0)) === 0 && (await queues.jobsExist(0, ['p0-1', 'p0-2'])).every(Boolean));
      await first.close();
      expect(await t.redis.lrange(readyKeys(namespace, 0).ready, 0, -1)).toEqual(['p0-1', 'p0-2']);
      void second.run();
      await until(async () => ran.length === 2);
      expect(ran.sort()).toEqual(['p0-1', 'p0-2']);
    } finally {
      await Promise.all([first.close(), second.close()]);
      other.disconnect();
      await queues.close();
    }
  });

  it('retries after the delay the pipeline chose, then dead-letters with the reason', async () => {
    const attempts: number[] = [];
    await withWorker(3, async (ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt < 3) return { outcome: 'retry', reason: 'ERR_FETCH_TIMEOUT: first byte', delayMs: 100 };
      return { outcome: 'dead', reason: 'ERR_FETCH_TIMEOUT: gave up after 3 attempts' };
    }, async (queues) => {
      await queues.addLeased(0, [job('p0-5')]);
      await until(async () => (await queues.counts()).failed === 1);
      expect(attempts).toEqual([1, 2, 3]);
      const [failed] = await queues.queue(0).getFailed();
      expect(failed?.failedReason).toBe('ERR_FETCH_TIMEOUT: gave up after 3 attempts');
      expect(await queues.deadLetters()).toMatchObject([{ id: 'p0-5', partition: 0, url: 'http://h/p0-5', attempts: 3 }]);
    });
  });

  it('dead-letters a job from the ready list with its reason, however long', async () => {
    const long = `ERR_HTTP_4XX: ${'x'.repeat(20_000)}`;
    await withWorker(1, async () => ({ outcome: 'dead', reason: long }), async (queues) => {
      await queues.addLeased(0, [job('p0-6')]);
      await until(async () => (await queues.counts()).failed === 1);
      const [failed] = await queues.queue(0).getFailed();
      expect(failed?.failedReason).toBe(long.slice(0, 10_000));
    });
  });

  it('re-runs dead letters with fresh attempts and a fresh, explicit lease id each time', async () => {
    let rounds = 0;
    const runs: { id: string; lease: string | null; attempt: number }[] = [];
    await withWorker(2, async (ctx) => {
      rounds += 1;
      runs.push({ id: ctx.id, lease: ctx.job.leaseId, attempt: ctx.attempt });
      return rounds <= 3 ? { outcome: 'dead', reason: `ERR_HTTP_5XX: try ${ctx.attempt}` } : { outcome: 'done', summary: {} };
    }, async (queues) => {
      await queues.addLeased(0, [job('p0-7'), job('p0-8')]);
      await until(async () => (await queues.counts()).failed === 2);
      expect(await queues.retryDeadLetters(['p0-7', 'nope'])).toBe(1);
      await until(async () => (await queues.counts()).failed === 2 && runs.length === 3);
      expect(await queues.retryDeadLetters(['p0-7'])).toBe(1);
      await until(async () => (await queues.counts()).completed === 1);
      expect(await queues.retryDeadLetters('all')).toBe(1);
      await until(async () => (await queues.counts()).completed === 2);
      expect(await queues.deadLetters()).toEqual([]);
    });
    const p07 = runs.filter((r) => r.id === 'p0-7');
    expect(p07.map((r) => r.attempt)).toEqual([1, 1, 1]);
    expect(p07[0]?.lease).toBe('p0-7');
    expect(p07[1]?.lease).toMatch(/^r-[0-9a-f-]{36}$/);
    expect(p07[2]?.lease).toMatch(/^r-[0-9a-f-]{36}$/);
    expect(new Set(p07.map((r) => r.lease)).size).toBe(3);
    expect(runs.find((r) => r.id === 'p0-8' && r.lease !== 'p0-8')?.lease).toMatch(/^r-/);
  });

  it('caps the dead-letter queue by count, keeping the newest', async () => {
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 1, deadLetterMax: 3 });
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options }, async (ctx) => ({ outcome: 'dead', reason: `ERR_HTTP_4XX: ${ctx.id}` }));
    void worker.run();
    try {
      for (let i = 1; i <= 6; i += 1) {
        await queues.addLeased(0, [job(`cap-${i}`)]);
        await until(async () => (await queues.queue(0).getJobState(`cap-${i}`)) === 'failed');
      }
      expect((await queues.counts()).failed).toBe(3);
      expect((await queues.deadLetters()).map((d) => d.id).sort()).toEqual(['cap-4', 'cap-5', 'cap-6']);
    } finally {
      await worker.close();
      await queues.close();
    }
  });

  it('dead-letters a job with an invalid payload and says why', async () => {
    const invalid: string[] = [];
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 3 });
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options, onInvalid: (id, p) => invalid.push(`${id} ${p}`) }, async () => ({ outcome: 'done', summary: {} }));
    void worker.run();
    await queues.queue(0).add('fetch', { u: 42, h: '' }, { jobId: 'bad-1', attempts: 3 });
    await until(async () => (await queues.counts()).failed === 1);
    const [failed] = await queues.queue(0).getFailed();
    expect(failed?.failedReason).toMatch(/^ERR_JOB_DATA_INVALID: /);
    expect(failed?.attemptsMade).toBe(1);
    expect(invalid[0]).toMatch(/^bad-1 /);
    await worker.close();
    await queues.close();
  });

  it('refuses, at the queue\'s edge, a job whose host is not its URL\'s: the gate and a pause key on the host', async () => {
    const seen: string[] = [];
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 1 });
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options }, async ({ job }) => {
      seen.push(`${job.host} ${job.url}`);
      return { outcome: 'done', summary: {} };
    });
    void worker.run();
    try {
      await queues.queue(0).add('fetch', { u: 'http://paused.example/x', h: 'open.example', p: 0, d: 0 }, { jobId: 'liar' });
      await queues.queue(0).add('fetch', { u: 'http://Open.Example:80/y', h: 'open.example', p: 0, d: 0 }, { jobId: 'honest' });
      await until(async () => ((await queues.counts()).failed ?? 0) + ((await queues.counts()).completed ?? 0) === 2);
      expect((await queues.queue(0).getJob('liar'))?.failedReason).toMatch(/^ERR_JOB_DATA_INVALID: h: must be the host of the URL/);
      expect(seen).toEqual(['open.example http://Open.Example:80/y']);
    } finally {
      await worker.close();
      await queues.close();
    }
  });

  it('runs at most `concurrency` jobs at once, from the ready list and the BullMQ queue together', async () => {
    let running = 0;
    let most = 0;
    let ran = 0;
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 1 });
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 3, stalledMs: 5000, jobs: queues.options }, async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 30));
      running -= 1;
      ran += 1;
      return { outcome: 'done', summary: {} };
    });
    void worker.run();
    try {
      await queues.addLeased(0, Array.from({ length: 12 }, (_, i) => job(`p0-${i}`)));
      await queues.queue(0).addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'fetch', data: { u: `http://h/b${i}`, h: 'h', p: 0, d: 0 }, opts: { jobId: `b${i}` } })));
      await until(async () => ran === 18);
      expect(most).toBe(3);
      expect((await queues.counts()).completed).toBe(18);
    } finally {
      await worker.close();
      await queues.close();
    }
  });

  it('gives back, at the head of the ready list and in order, the jobs a stopping consumer took and never started', async () => {
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 1 });
    const ready = new ReadyJobs(t.redis, namespace);
    try {
      await queues.addLeased(0, ['p0-1', 'p0-2', 'p0-3', 'p0-4', 'p0-5'].map((id) => job(id)));
      const consumer = 'worker@h:1:aaaaaa|p0|c';
      await ready.register(0, consumer);
      expect((await ready.take(0, consumer, null, 3)).map((j) => j.id)).toEqual(['p0-1', 'p0-2', 'p0-3']);
      // p0-2 is still running: it stays held; the other two go back before p0-4.
      expect(await ready.giveBack(0, consumer, ['p0-2'])).toBe(2);
      expect(await t.redis.lrange(readyKeys(namespace, 0).ready, 0, -1)).toEqual(['p0-1', 'p0-3', 'p0-4', 'p0-5']);
      expect((await heldFetchJobs(t.redis, namespace, 0, 'worker@h:1:aaaaaa')).map((j) => j.jobId)).toEqual(['p0-2']);
      await ready.finish(0, consumer, 'p0-2', true);
      // Nothing held any more: the held list leaves the registry.
      expect(await ready.giveBack(0, consumer, [])).toBe(0);
      expect(await t.redis.smembers(readyKeys(namespace, 0).registry)).toEqual([]);
    } finally {
      await queues.close();
    }
  });

  it('counts waiting jobs for backpressure', async () => {
    const namespace = `${t.prefix}q${(n += 1)}`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 2, attempts: 1 });
    await queues.addLeased(1, [job('p1-1'), job('p1-2'), job('p1-3')]);
    expect(await queues.waiting(1)).toBe(3);
    expect(await queues.waiting(0)).toBe(0);
    await queues.close();
  });
});

describe('heldFetchJobs', () => {
  it('finds the jobs a worker process holds (taken from the ready list, or active under its lock) with their leases, and nobody else’s', async () => {
    const namespace = `${t.prefix}held`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 1 });
    const release: (() => void)[] = [];
    const seen: string[] = [];
    const hold = async (ctx: FetchJobContext): Promise<JobResult> => {
      seen.push(ctx.token);
      await new Promise<void>((resolve) => release.push(resolve));
      return { outcome: 'done', summary: {} };
    };
    const other = testConnection({ blocking: true });
    const a = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 2, stalledMs: 5000, jobs: queues.options, holder: 'worker@h:1:aaaaaa' }, hold);
    const b = new FetchWorker(other, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options, holder: 'worker@h:10:bbbbbb' }, hold);
    void a.run();
    void b.run();
    try {
      await queues.addLeased(0, [job('p0-1'), job('p0-2'), job('p0-3')]);
      await until(async () => seen.length === 3);
      const heldByA = await heldFetchJobs(t.redis, namespace, 0, 'worker@h:1:aaaaaa');
      const heldByB = await heldFetchJobs(t.redis, namespace, 0, 'worker@h:10:bbbbbb');
      expect(heldByA).toHaveLength(2);
      expect(heldByB).toHaveLength(1);
      expect([...heldByA, ...heldByB].map((j) => j.leaseId).sort()).toEqual(['p0-1', 'p0-2', 'p0-3']);
      // The token is the one the job ran under (the gate's attempt token).
      expect([...heldByA, ...heldByB].map((j) => j.token).sort()).toEqual([...seen].sort());
      expect(heldByA.every((j) => j.token.startsWith('worker@h:1:aaaaaa|p0|'))).toBe(true);
      expect(await heldFetchJobs(t.redis, namespace, 0, 'worker@h:1')).toEqual([]);
      // Once their leases are freed, a lapsed worker's ready-list jobs are dropped, nobody else's.
      expect(await forgetHeldFetchJobs(t.redis, namespace, 0, 'worker@h:1:aaaaaa')).toBe(2);
      expect(await heldFetchJobs(t.redis, namespace, 0, 'worker@h:1:aaaaaa')).toEqual([]);
      expect((await queues.jobsExist(0, ['p0-1', 'p0-2', 'p0-3'])).filter(Boolean)).toHaveLength(1);
      expect(await heldFetchJobs(t.redis, namespace, 0, 'worker@h:10:bbbbbb')).toHaveLength(1);
    } finally {
      for (const r of release) r();
      await Promise.all([a.close(), b.close()]);
      other.disconnect();
      await queues.close();
    }
  });
});
