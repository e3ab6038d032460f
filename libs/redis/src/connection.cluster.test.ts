import { afterAll, describe, expect, it } from 'vitest';
import { bindScripts, deleteByPrefix, isCluster, masterNodes, probeRedis, scanKeys } from './index.js';
import { TEST_REDIS_CLUSTER_URL, TEST_REDIS_IS_CLUSTER, testRedis } from './testing/index.js';

// Runs in the redis-cluster test project, against the 3-master cluster its global setup started.
const t = testRedis('cluster');
afterAll(() => t.cleanup());

/** Which master holds each key matching `pattern`. */
async function ownerOf(pattern: string): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  for await (const { node, keys } of scanKeys(t.redis, pattern)) for (const key of keys) owners.set(key, `${node.options.port}`);
  return owners;
}

describe('a Redis Cluster client', () => {
  it('is a cluster of three masters', async () => {
    expect(TEST_REDIS_IS_CLUSTER).toBe(true);
    expect(isCluster(t.redis)).toBe(true);
    expect(await masterNodes(t.redis)).toHaveLength(3);
    expect(String(await t.redis.call('CLUSTER', 'INFO'))).toMatch(/cluster_state:ok/);
  });

  it('deleteByPrefix removes a prefix from every master, and nothing else', async () => {
    const keys = Array.from({ length: 300 }, (_, i) => `${t.prefix}:del:${i}`);
    const others = Array.from({ length: 30 }, (_, i) => `${t.prefix}:keep:${i}`);
    await Promise.all([...keys, ...others].map((key) => t.redis.set(key, '1')));
    // Without a hash tag the keys spread over the slots, so over every master.
    const before = await ownerOf(`${t.prefix}:del:*`);
    expect(before.size).toBe(300);
    expect(new Set(before.values()).size).toBe(3);

    expect(await deleteByPrefix(t.redis, `${t.prefix}:del:`)).toBe(300);
    expect((await ownerOf(`${t.prefix}:del:*`)).size).toBe(0);
    expect((await ownerOf(`${t.prefix}:keep:*`)).size).toBe(30);
  });

  it('refuses a script over keys of different slots, and runs it over one hash tag', async () => {
    const touch = bindScripts<'touch'>(t.redis, [
      { name: 'touch', numberOfKeys: 2, lua: "redis.call('SET', KEYS[1], 1); redis.call('SET', KEYS[2], 1); return 2" },
    ]).touch;
    await expect(touch([`${t.prefix}:a`, `${t.prefix}:b`], [])).rejects.toThrow(/CROSSSLOT|same slot/);
    expect(await touch([`${t.prefix}:{p1}:a`, `${t.prefix}:{p1}:b`], [])).toBe(2);
  });

  it('probes a cluster: every master must answer', async () => {
    expect(await probeRedis(TEST_REDIS_CLUSTER_URL as string, 1000, { cluster: true })).toBe(true);
    expect(await probeRedis('redis://127.0.0.1:1', 300, { cluster: true })).toBe(false);
    expect(await probeRedis('not a url', 300, { cluster: true })).toBe(false);
  });
});
