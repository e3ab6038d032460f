import type { Redis } from '@trawl/redis';

/** Sum of MEMORY USAGE over every key of a prefix (exact per key, whatever else the server holds), and the key count. */
export async function keyBytes(redis: Redis, prefix: string): Promise<{ bytes: number; keys: number }> {
  let cursor = '0';
  let bytes = 0;
  let keys = 0;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    const pipeline = redis.pipeline();
    for (const key of batch) pipeline.memory('USAGE', key, 'SAMPLES', '0');
    for (const [, value] of (await pipeline.exec()) ?? []) bytes += Number(value ?? 0);
    keys += batch.length;
  } while (cursor !== '0');
  return { bytes, keys };
}
