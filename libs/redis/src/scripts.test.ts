import { hash, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { bindScripts } from './scripts.js';
import { testRedis } from './testing/index.js';

describe('bindScripts', () => {
  const t = testRedis('scripts');
  afterAll(() => t.cleanup());

  // A body no server has cached yet: the first call meets NOSCRIPT.
  const fresh = (lua: string) => ({ name: 'incrBy', numberOfKeys: 1, lua: `-- ${randomUUID()}\n${lua}` });

  it('runs a script the server has not cached, then by its hash', async () => {
    const script = fresh("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    const { incrBy } = bindScripts<'incrBy'>(t.redis, [script]);
    const key = `${t.prefix}:counter`;
    const cached = async () => ((await t.redis.script('EXISTS', hash('sha1', script.lua))) as number[])[0];
    expect(await cached()).toBe(0);
    expect(await incrBy([key], [2])).toBe(2);
    expect(await cached()).toBe(1);
    expect(await incrBy([key], [3])).toBe(5);
    // Several at once, on the auto-pipelined connection: each runs once.
    expect((await Promise.all(Array.from({ length: 10 }, () => incrBy([key], [1])))).sort((a, b) => Number(a) - Number(b))).toEqual([6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    expect(await t.redis.get(key)).toBe('15');
  });

  it('passes the script’s own errors on, and refuses a wrong number of keys', async () => {
    const { incrBy } = bindScripts<'incrBy'>(t.redis, [fresh("return redis.error_reply('ERR_TRAWL_TEST ' .. ARGV[1])")]);
    await expect(incrBy([`${t.prefix}:x`], ['boom'])).rejects.toThrow('ERR_TRAWL_TEST boom');
    await expect(incrBy([`${t.prefix}:x`], ['again'])).rejects.toThrow('ERR_TRAWL_TEST again');
    expect(() => incrBy([], [])).toThrow('incrBy takes 1 keys, got 0');
  });
});
