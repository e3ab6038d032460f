import { OperatorQueries } from '@trawl/db';
import { type RenderOverride, RenderOverrides } from '@trawl/model';
import type { Runtime } from './runtime.js';

type OverrideRuntime = Pick<Runtime, 'db' | 'redis' | 'config' | 'clock'>;

const redisCopy = (runtime: OverrideRuntime): RenderOverrides => new RenderOverrides(runtime.redis, runtime.config.namespace, () => runtime.clock.now(), 0);

/**
 * Sets (or, with null, clears) a host's rendering override: in PostgreSQL first (the durable
 * copy), then in Redis, which every fetch stage reads. Should the process die between the two,
 * the next restore (a rebuild, a scheduler or dashboard start) finishes a set; a clear is then
 * set again by the operator, who sees the override still shown.
 */
export async function setRenderOverride(runtime: OverrideRuntime, host: string, mode: RenderOverride | null, by: string | null): Promise<void> {
  await new OperatorQueries(runtime.db.pool, runtime.config.namespace).setRenderOverride(host, mode, by);
  await redisCopy(runtime).set(host, mode);
}

/**
 * Puts the rendering overrides PostgreSQL records back into Redis (a frontier rebuilt after Redis
 * lost the crawl, a scheduler or dashboard starting). Idempotent; returns how many were restored.
 */
export async function restoreRenderOverrides(runtime: OverrideRuntime): Promise<number> {
  const rows = await new OperatorQueries(runtime.db.pool, runtime.config.namespace).renderOverrides();
  await redisCopy(runtime).restore(rows);
  return rows.length;
}
