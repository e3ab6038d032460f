import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

describe('Batcher', () => {
  it('groups items from many callers into one run and returns each caller its own results', async () => {
    const runs: number[][] = [];
    const batcher = new Batcher<number, number>({
      maxItems: 100,
      maxWaitMs: 5,
      run: async (items) => {
        runs.push(items);
        return items.map((n) => n * 10);
      },
    });
    const [a, b, c] = await Promise.all([batcher.add([1, 2]), batcher.add([3]), batcher.addOne(4)]);
    expect(runs).toEqual([[1, 2, 3, 4]]);
    expect(a).toEqual([10, 20]);
    expect(b).toEqual([30]);
    expect(c).toBe(40);
  });

  it('flushes at maxItems without waiting for the timer', async () => {
    const runs: number[][] = [];
    const batcher = new Batcher<number, void>({
      maxItems: 2,
      maxWaitMs: 60_000,
      run: async (items) => {
        runs.push(items);
        return items.map(() => undefined);
      },
    });
    await Promise.all([batcher.add([1]), batcher.add([2]), batcher.add([3, 4])]);
    expect(runs).toEqual([[1, 2], [3, 4]]);
  });

  it('rejects every caller of a failed batch and keeps working afterwards', async () => {
    let fail = true;
    const batcher = new Batcher<number, number>({
      maxItems: 10,
      maxWaitMs: 1,
      run: async (items) => {
        if (fail) throw new Error('boom');
        return items;
      },
    });
    await expect(Promise.all([batcher.add([1]), batcher.add([2])])).rejects.toThrow('boom');
    fail = false;
    await expect(batcher.add([3])).resolves.toEqual([3]);
  });

  it('rejects a run that returns the wrong number of results', async () => {
    const batcher = new Batcher<number, number>({ maxItems: 10, maxWaitMs: 1, run: async () => [1] });
    await expect(batcher.add([1, 2])).rejects.toThrow(/1 results for 2 items/);
  });

  it('drain runs what is waiting and waits for running batches', async () => {
    const done: number[] = [];
    const batcher = new Batcher<number, void>({
      maxItems: 100,
      maxWaitMs: 60_000,
      run: async (items) => {
        await new Promise((r) => setTimeout(r, 10));
        done.push(...items);
        return items.map(() => undefined);
      },
    });
    void batcher.add([1, 2]);
    await batcher.drain();
    expect(done).toEqual([1, 2]);
    expect(batcher.size).toBe(0);
  });

  it('urgent items go first, are flushed without the wait, and run beside a running batch', async () => {
    const runs: number[][] = [];
    const release: (() => void)[] = [];
    const batcher = new Batcher<number, number>({
      maxItems: 100,
      maxWaitMs: 60_000,
      run: async (items) => {
        runs.push(items);
        await new Promise<void>((resolve) => release.push(resolve));
        return items;
      },
    });
    const plain = batcher.add([1, 2]);
    const first = batcher.add([9], { urgent: true });
    await new Promise((resolve) => setImmediate(resolve));
    // The urgent item did not wait a minute: it went at once, with the plain items behind it.
    expect(runs).toEqual([[9, 1, 2]]);
    // While that batch runs, another urgent item runs beside it (the limit is 1); plain ones wait.
    const later = batcher.add([3]);
    const second = batcher.addOne(8, { urgent: true });
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toEqual([[9, 1, 2], [8, 3]]);
    // A third batch waits for one of the two to end.
    const third = batcher.addOne(7, { urgent: true });
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toHaveLength(2);
    release.shift()?.();
    await Promise.all([plain, first]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toEqual([[9, 1, 2], [8, 3], [7]]);
    for (const done of release.splice(0)) done();
    expect(await Promise.all([later, second, third])).toEqual([[3], 8, 7]);
  });
});
