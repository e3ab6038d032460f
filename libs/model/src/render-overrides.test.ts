import { testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { RenderOverrides } from './render-overrides.js';

const t = testRedis('render-overrides');
afterAll(() => t.cleanup());

describe('RenderOverrides', () => {
  it('sets and clears a host override, seen by another process once its cached read is older than cacheMs', async () => {
    let now = 1000;
    const operator = new RenderOverrides(t.redis, t.prefix, () => now);
    const worker = new RenderOverrides(t.redis, t.prefix, () => now, 2000);
    expect(await worker.of('spa.example')).toBeNull();
    await operator.set('spa.example', 'never');
    expect(await operator.of('spa.example')).toBe('never');
    // The worker read "none" a moment ago: it keeps that answer for cacheMs.
    expect(await worker.of('spa.example')).toBeNull();
    now += 2000;
    expect(await worker.of('spa.example')).toBe('never');
    await operator.set('spa.example', null);
    now += 2000;
    expect(await worker.of('spa.example')).toBeNull();
    await t.redis.hset(`${t.prefix}:render:hosts`, 'odd.example', 'sometimes');
    expect(await worker.of('odd.example')).toBeNull();
  });

  it('restores overrides in one call, replacing a cached read, and leaves hosts it does not name', async () => {
    const now = 1000;
    const worker = new RenderOverrides(t.redis, `${t.prefix}r`, () => now, 60_000);
    await worker.set('kept.example', 'always');
    expect(await worker.of('spa.example')).toBeNull();
    await worker.restore([{ host: 'spa.example', mode: 'always' }, { host: 'static.example', mode: 'never' }]);
    await worker.restore([]);
    expect(await worker.of('spa.example')).toBe('always');
    expect(await worker.of('static.example')).toBe('never');
    expect(await worker.of('kept.example')).toBe('always');
  });

  it('notices a Redis that lost the overrides, and one that got them back', async () => {
    let now = 1000;
    const prefix = `${t.prefix}w`;
    const operator = new RenderOverrides(t.redis, prefix, () => now);
    const worker = new RenderOverrides(t.redis, prefix, () => now, 2000);
    await operator.set('spa.example', 'always');
    expect(await worker.of('spa.example')).toBe('always');
    await t.redis.del(`${prefix}:render:hosts`, `${prefix}:render:version`);
    now += 2000;
    expect(await worker.of('spa.example')).toBeNull();
    await operator.restore([{ host: 'spa.example', mode: 'never' }]);
    now += 2000;
    expect(await worker.of('spa.example')).toBe('never');
  });
});
