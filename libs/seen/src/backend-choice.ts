/** TRAWL_SEEN_BACKEND: what the operator asked for. */
export type BloomBackendChoice = 'auto' | 'redisbloom' | 'lua';
/** What a namespace's seen-set is built on, as recorded (and as TRAWL_SEEN_BACKEND spells it). */
export type SeenBackend = Exclude<BloomBackendChoice, 'auto'>;

export interface BackendFacts {
  choice: BloomBackendChoice;
  /** The backend recorded for the namespace by the first process, if any. */
  recorded: SeenBackend | null;
  /** A filter found in Redis without a record (a crawl started before choices were recorded). */
  found: SeenBackend | null;
  /** The server has the RedisBloom module. */
  moduleAvailable: boolean;
  /** Where the record lives, for messages. */
  settingsKey: string;
}

export type BackendDecision = { backend: SeenBackend; record: boolean } | { problem: string };

/**
 * Which Bloom backend this process uses. The two backends keep different keys, so processes of
 * one crawl that chose differently would each see half the URLs as new: the first process decides
 * (`auto`: RedisBloom when the server has the module) and records it, and every later process
 * follows the record. An explicit TRAWL_SEEN_BACKEND that contradicts the record stops the
 * process instead of silently splitting the seen-set.
 */
export function decideBackend(facts: BackendFacts): BackendDecision {
  const established = facts.recorded ?? facts.found;
  if (established) {
    const where = facts.recorded ? `recorded in ${facts.settingsKey}` : 'its filter keys exist in Redis';
    if (facts.choice !== 'auto' && facts.choice !== established) {
      return {
        problem:
          `TRAWL_SEEN_BACKEND=${facts.choice}, but this crawl's seen-set uses ${established} (${where}): ` +
          `set TRAWL_SEEN_BACKEND=${established} or auto, or start a fresh namespace`,
      };
    }
    if (established === 'redisbloom' && !facts.moduleAvailable) {
      return {
        problem: `this crawl's seen-set uses redisbloom (${where}), but the Redis server has no RedisBloom module (BF.* commands): use a server with it (Redis 8, redis-stack)`,
      };
    }
    return { backend: established, record: facts.recorded === null };
  }
  if (facts.choice === 'redisbloom' && !facts.moduleAvailable) {
    return { problem: 'TRAWL_SEEN_BACKEND=redisbloom, but the Redis server has no RedisBloom module (BF.* commands): use a server with it, or set TRAWL_SEEN_BACKEND=auto or lua' };
  }
  const backend: SeenBackend = facts.choice === 'auto' ? (facts.moduleAvailable ? 'redisbloom' : 'lua') : facts.choice;
  return { backend, record: true };
}
