import { afterAll, describe, expect, it } from 'vitest';
import { deleteByPrefix, isCluster, masterNodes, parseClusterUrls, probeRedis } from './connection.js';
import { testRedis } from './testing/index.js';

describe('parseClusterUrls', () => {
  it.each([
    ['redis://10.0.0.5:7000', { nodes: [{ host: '10.0.0.5', port: 7000 }], tls: false }],
    [' redis://a:7000 , redis://b ,', { nodes: [{ host: 'a', port: 7000 }, { host: 'b', port: 6379 }], tls: false }],
    ['rediss://user:p%40ss@a:7000/0,rediss://user:p%40ss@[::1]:7001', { nodes: [{ host: 'a', port: 7000 }, { host: '::1', port: 7001 }], username: 'user', password: 'p@ss', tls: true }],
  ])('%s', (value, expected) => {
    expect(parseClusterUrls(value)).toEqual({ username: undefined, password: undefined, ...expected });
  });

  it.each([
    ['', /no Redis Cluster seed node/],
    ['redis://a:7000,http://b:7000', /expected redis/],
    ['redis://a:7000/3', /only database 0/],
    ['redis://u:x@a:7000,redis://u:y@b:7000', /share scheme, user and password/],
    ['a:7000', /expected redis|not a URL/],
  ])('refuses %j', (value, problem) => {
    expect(() => parseClusterUrls(value)).toThrow(problem);
  });
});

describe('probeRedis', () => {
  it('says false, never throws, for what is not one server', async () => {
    expect(await probeRedis('redis://127.0.0.1:1,redis://127.0.0.1:2', 300)).toBe(false);
    expect(await probeRedis('redis://127.0.0.1:1', 300)).toBe(false);
  });
});

describe('on one server', () => {
  const t = testRedis('connection');
  afterAll(() => t.cleanup());

  it('is its own only master node', async () => {
    if (isCluster(t.redis)) return; // the redis-cluster project has its own test of this
    expect(await masterNodes(t.redis)).toEqual([t.redis]);
  });

  it('deleteByPrefix removes exactly the prefix', async () => {
    await Promise.all(Array.from({ length: 50 }, (_, i) => t.redis.set(`${t.prefix}:x:${i}`, '1')));
    await t.redis.set(`${t.prefix}:y`, '1');
    expect(await deleteByPrefix(t.redis, `${t.prefix}:x:`)).toBe(50);
    expect(await t.redis.exists(`${t.prefix}:y`)).toBe(1);
    // Glob characters in the prefix are literal.
    await Promise.all([`${t.prefix}:a*:1`, `${t.prefix}:a*:2`, `${t.prefix}:ab:1`].map((k) => t.redis.set(k, '1')));
    expect(await deleteByPrefix(t.redis, `${t.prefix}:a*`)).toBe(2);
    expect(await t.redis.exists(`${t.prefix}:ab:1`)).toBe(1);
  });
});
