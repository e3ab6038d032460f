import { type Config, ConfigError } from '@trawl/config';
import type { Redis } from '@trawl/redis';

/**
 * The settings that shape a crawl's data in Redis, fixed when its namespace is created: the
 * number of frontier partitions (which host lives where), the priority bands of each back queue,
 * and the seen-set backend (a RedisBloom filter and a Lua bitmap are not interchangeable). They
 * are recorded in `<namespace>:settings`; a process configured differently refuses to start
 * rather than quietly splitting one crawl's data two ways.
 */
/** A seen-set backend as the configuration names it (never `auto` once recorded). */
export type SeenBackend = 'redisbloom' | 'lua';

export interface NamespaceSettings {
  partitions: number;
  bands: number;
  seenBackend: SeenBackend;
  /** True when this process recorded them (a new namespace). */
  created: boolean;
  /**
   * True when nothing was recorded but PostgreSQL holds the crawl's URLs: Redis lost its data.
   * Nothing was recorded then either; `trawl frontier rebuild` records the settings when it has
   * restored the frontier (see `wipedMessage`).
   */
  wiped: boolean;
  /** Writes them again (after `trawl crawl --fresh` wiped the namespace). */
  record(): Promise<void>;
}

const FIELDS = { partitions: 'partitions', bands: 'bands', seen: 'seen' } as const;

export const settingsKey = (namespace: string): string => `${namespace}:settings`;

/**
 * Whether the namespace's settings are recorded: its `partitions` field, which only this module
 * writes (the seen-set's factory writes the `seen` field on its own, so the key alone says
 * nothing after a wipe). Absent while PostgreSQL knows URLs: Redis lost the crawl.
 */
export async function settingsRecorded(redis: Redis, namespace: string): Promise<boolean> {
  return (await redis.hexists(settingsKey(namespace), FIELDS.partitions)) === 1;
}

/** What to tell an operator when Redis lost a crawl's data: exactly what to run. */
export const wipedMessage = (namespace: string): string =>
  `Redis has lost the data of the crawl in namespace "${namespace}" (its recorded settings in ${settingsKey(namespace)} are gone) while PostgreSQL still holds its URLs. ` +
  `Run \`trawl frontier rebuild --namespace ${namespace}\` (with this crawl's REDIS_URL and DATABASE_URL) to restore the frontier and the seen-set from PostgreSQL; nothing is dispatched until it has restored the crawl's settings (then each host as its URLs are restored).`;

/**
 * Reads the namespace's recorded settings, recording this process's on first use, and checks
 * that the configuration agrees. `resolveSeen` picks the seen-set backend when the configuration
 * says `auto` and nothing is recorded yet (it probes the server once).
 */
export async function checkNamespaceSettings(
  redis: Redis,
  config: Readonly<Config>,
  resolveSeen: (choice: Config['seen']['backend']) => Promise<SeenBackend>,
  /** Whether PostgreSQL holds URLs of this crawl (a namespace with none is simply new). */
  hasUrls: () => Promise<boolean> = async () => false,
): Promise<NamespaceSettings> {
  const key = settingsKey(config.namespace);
  const recorded = await redis.hgetall(key);
  const seenBackend: SeenBackend = (recorded[FIELDS.seen] as SeenBackend | undefined) ?? (await resolveSeen(config.seen.backend));
  const mine = { [FIELDS.partitions]: String(config.partitions), [FIELDS.bands]: String(config.dispatch.bands), [FIELDS.seen]: seenBackend };
  const record = async (): Promise<void> => {
    const pipeline = redis.pipeline();
    for (const [field, value] of Object.entries(mine)) pipeline.hsetnx(key, field, value);
    await pipeline.exec();
  };
  let created = false;
  let wiped = false;
  if (recorded[FIELDS.partitions] === undefined) {
    // Settings gone but URLs known: Redis lost the crawl, which only a rebuild brings back.
    if (await hasUrls()) wiped = true;
    else {
      await record();
      created = true;
    }
  }
  // Read back: when two processes create a namespace at once, the first write of each field wins.
  const current = await redis.hgetall(key);
  const problems: string[] = [];
  const differs = (env: string, field: string, given: string) => {
    const used = current[field];
    if (used !== undefined && used !== given) {
      problems.push(`${env}: this process is configured with ${given}, but the crawl in namespace "${config.namespace}" was created with ${used}. It cannot change under a running crawl: use ${used}, or start a new namespace.`);
    }
  };
  differs('TRAWL_PARTITIONS', FIELDS.partitions, String(config.partitions));
  differs('TRAWL_PRIORITY_BANDS', FIELDS.bands, String(config.dispatch.bands));
  if (config.seen.backend !== 'auto') differs('TRAWL_SEEN_BACKEND', FIELDS.seen, config.seen.backend);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    partitions: config.partitions,
    bands: config.dispatch.bands,
    seenBackend: (current[FIELDS.seen] as SeenBackend | undefined) ?? seenBackend,
    created,
    wiped,
    record,
  };
}
