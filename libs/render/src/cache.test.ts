import { describe, expect, it } from 'vitest';
import { MemorySubresourceCache } from './cache.js';
import type { FetchedResponse } from './types.js';

const response = (bytes: number): FetchedResponse => ({ status: 200, headers: {}, body: Buffer.alloc(bytes, 120) });

describe('MemorySubresourceCache', () => {
  it('loads once and hands the same response to later and concurrent requests', async () => {
    const cache = new MemorySubresourceCache();
    let loads = 0;
    const load = async (): Promise<FetchedResponse> => {
      loads++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return response(10);
    };
    const [a, b] = await Promise.all([cache.getOrLoad('u', load, () => true), cache.getOrLoad('u', load, () => true)]);
    const c = await cache.getOrLoad('u', load, () => true);
    expect(loads).toBe(1);
    expect([a.hit, b.hit, c.hit]).toEqual([false, true, true]);
  });

  it('keeps nothing it is told not to, and nothing over maxEntryBytes', async () => {
    const cache = new MemorySubresourceCache({ maxBytes: 1000, maxEntryBytes: 100 });
    await cache.getOrLoad('a', async () => response(10), () => false);
    await cache.getOrLoad('b', async () => response(200), () => true);
    expect(cache.size).toEqual({ entries: 0, bytes: 0 });
  });

  it('drops the least recently used beyond maxBytes', async () => {
    const cache = new MemorySubresourceCache({ maxBytes: 250, maxEntryBytes: 100 });
    for (const url of ['a', 'b']) await cache.getOrLoad(url, async () => response(100), () => true);
    await cache.getOrLoad('a', async () => response(100), () => true); // a used again
    await cache.getOrLoad('c', async () => response(100), () => true); // b goes
    expect(cache.size).toEqual({ entries: 2, bytes: 200 });
    expect((await cache.getOrLoad('a', async () => response(1), () => true)).hit).toBe(true);
    expect((await cache.getOrLoad('b', async () => response(1), () => true)).hit).toBe(false);
  });

  it('a failed load is shared by its waiters and not kept', async () => {
    const cache = new MemorySubresourceCache();
    const load = async (): Promise<FetchedResponse> => {
      throw new Error('boom');
    };
    await expect(Promise.all([cache.getOrLoad('x', load, () => true), cache.getOrLoad('x', load, () => true)])).rejects.toThrow('boom');
    expect((await cache.getOrLoad('x', async () => response(1), () => true)).hit).toBe(false);
  });
});
