import { Queue } from 'bullmq';
import { type RedisClient as Redis, scanKeys } from '@trawl/redis';
import { fetchQueueName, fetchQueuePrefix } from './job.js';
import { RENDER_QUEUE, renderQueuePrefix } from './render.js';
import { SEEDS_QUEUE, seedsQueuePrefix } from './seeds.js';
import { SWEEPS_QUEUE, sweepsQueuePrefix } from './sweeps.js';

/** One BullMQ queue of a crawl: its name and its key prefix (which carries a hash tag). */
export interface QueueSpec {
  name: string;
  prefix: string;
}

/**
 * Every queue a crawl of `partitions` partitions is known to have, from one place: the `seeds`,
 * `sweeps` and `render` queues and one fetch queue per partition. Queues trawl adds later (a sweeps queue, …) are found
 * anyway by `discoverQueues`, since every trawl queue lives under `<namespace>:{<tag>}`.
 */
export function knownQueues(namespace: string, partitions: number): QueueSpec[] {
  return [
    { name: SEEDS_QUEUE, prefix: seedsQueuePrefix(namespace) },
    { name: SWEEPS_QUEUE, prefix: sweepsQueuePrefix(namespace) },
    { name: RENDER_QUEUE, prefix: renderQueuePrefix(namespace) },
    ...Array.from({ length: partitions }, (_, p) => ({ name: fetchQueueName(p), prefix: fetchQueuePrefix(namespace, p) })),
  ];
}

const QUEUE_KEY = /^(.+:\{[^}]+\}):([^:]+):(?:id|meta)$/;

/**
 * The known queues plus any other BullMQ queue under `<namespace>:{<tag>}:<name>` (found by its
 * `id` or `meta` key, and confirmed by a BullMQ-shaped meta hash or id counter). One SCAN over
 * the keyspace: call it now and then, not per request.
 */
export async function discoverQueues(redis: Redis, namespace: string, partitions: number, options: { maxKeys?: number } = {}): Promise<QueueSpec[]> {
  const found = new Map(knownQueues(namespace, partitions).map((q) => [`${q.prefix}:${q.name}`, q]));
  const candidates = new Map<string, QueueSpec>();
  const maxKeys = options.maxKeys ?? 5_000_000;
  let scanned = 0;
  // Every master of a cluster (scanKeys walks each node).
  for await (const { keys } of scanKeys(redis, `${namespace}:{*}:*`, 5000)) {
    scanned += keys.length;
    for (const key of keys) {
      const match = QUEUE_KEY.exec(key);
      if (!match) continue;
      const spec = { prefix: match[1] as string, name: match[2] as string };
      const id = `${spec.prefix}:${spec.name}`;
      if (!found.has(id)) candidates.set(id, spec);
    }
    if (scanned >= maxKeys) break;
  }
  for (const [id, spec] of candidates) {
    const [idType, metaType] = await Promise.all([redis.type(`${id}:id`), redis.type(`${id}:meta`)]);
    // BullMQ keeps a string job-id counter and a hash of queue metadata; other trawl keys
    // (the seen-set's meta, frontier host hashes) have neither shape under this name.
    const bullmqMeta = metaType === 'hash' && (await redis.hexists(`${id}:meta`, 'opts.maxLenEvents')) === 1;
    if (idType === 'string' || bullmqMeta) found.set(id, spec);
  }
  return [...found.values()];
}

/**
 * Opens a BullMQ queue for inspection and operator actions (the dashboard's bull-board). It leaves
 * the queue's settings (its meta hash: the event stream's length) as their owner wrote them.
 */
export function openQueue(connection: Redis, spec: QueueSpec): Queue {
  return new Queue(spec.name, { connection, prefix: spec.prefix, skipMetasUpdate: true });
}
