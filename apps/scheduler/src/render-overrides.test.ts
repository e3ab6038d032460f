import { createHash, randomBytes } from 'node:crypto';
import { loadConfig } from '@trawl/config';
import { OperatorQueries } from '@trawl/db';
import { RenderOverrides } from '@trawl/model';
import { deleteByPrefix } from '@trawl/redis';
import { Runtime, setRenderOverride } from '@trawl/runtime';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildFromDatabase } from './rebuild.js';

/**
 * Operators' rendering overrides on a real runtime (Redis, PostgreSQL): set through the runtime
 * (PostgreSQL first, then Redis), Redis loses the crawl, and `trawl frontier rebuild` puts them
 * back before it hands the crawl back. Judged from what a worker's `RenderOverrides` reads.
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const namespace = `t_renderov_${randomBytes(4).toString('hex')}`;
let runtime: Runtime;
/** A worker's view: no cache, so each read is what Redis holds now. */
let worker: RenderOverrides;

beforeAll(async () => {
  const config = loadConfig({ env: { TRAWL_NAMESPACE: namespace } });
  runtime = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
  worker = new RenderOverrides(runtime.redis, namespace, () => runtime.clock.now(), 0);
  expect((await runtime.intact()).ok).toBe(true);
  // A crawl PostgreSQL knows, so losing Redis loses something the rebuild restores.
  const url = 'http://spa.example/';
  await runtime.db.insertDiscovered([{ hash: createHash('sha256').update(url).digest().subarray(0, 16), url, host: 'spa.example', depth: 0, from: null }]);
});

afterAll(async () => {
  await deleteByPrefix(runtime.redis, namespace);
  await runtime.db.pool.query(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`);
  await runtime.close();
});

describe('durable rendering overrides', () => {
  it('a frontier rebuilt after Redis lost the crawl has every override back; a cleared one stays cleared', async () => {
    await setRenderOverride(runtime, 'spa.example', 'always', 'tok:1234');
    await setRenderOverride(runtime, 'static.example', 'never', null);
    await setRenderOverride(runtime, 'cleared.example', 'always', null);
    await setRenderOverride(runtime, 'cleared.example', null, null);
    const durable = await new OperatorQueries(runtime.db.pool, namespace).renderOverrides();
    expect(durable.map((r) => [r.host, r.mode, r.setBy])).toEqual([['spa.example', 'always', 'tok:1234'], ['static.example', 'never', null]]);
    expect(await worker.of('spa.example')).toBe('always');
    expect(await worker.of('cleared.example')).toBeNull();

    // Redis loses the crawl, overrides with it.
    await deleteByPrefix(runtime.redis, namespace);
    expect(await worker.of('spa.example')).toBeNull();
    expect((await runtime.intact()).ok).toBe(false);

    expect(await rebuildFromDatabase(runtime, silentLogger)).toMatchObject({ rows: 1, queued: 1 });
    expect((await runtime.intact()).ok).toBe(true);
    expect(await worker.of('spa.example')).toBe('always');
    expect(await worker.of('static.example')).toBe('never');
    expect(await worker.of('cleared.example')).toBeNull();
    expect(await runtime.redis.hlen(`${namespace}:render:hosts`)).toBe(2);
  });
});
