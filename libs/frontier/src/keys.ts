/**
 * Every frontier key of a partition carries the same Redis Cluster hash tag `{p<n>}`, so a
 * partition lives in one slot and each Lua script touches one slot. Per-host keys are built
 * inside the scripts from `base`:
 *   <base>h:<host>          HASH  due, claim, tok, tokUntil, gap (the last delay asked), n (queued), total (ever queued),
 *                                 seed (its seeds' highest priority), sp (spilled: queued in PostgreSQL),
 *                                 spb (their highest band at most), spz (when a refill first found none of them)
 *   <base>q:<host>:<band>   LIST  back queue entries of one priority band
 *   <base>v:<host>          HASH  URLs ever queued per query-variant key (TRAWL_MAX_QUERY_VARIANTS)
 *   <base>in:<host>         HLL   the distinct hosts that link to it (its authority; see rank.ts)
 *   <base>rf:<token>        STRING a refill's outcome, 'applied' or 'void' (kept a week)
 * A host's `h:` and `v:` keys expire once it is idle (`idleHostTtlMs`); its `in:` key that long
 * after the last new link to it was noted.
 */
export interface FrontierKeys {
  base: string;
  ready: string;
  leases: string;
  leaseData: string;
  tombstones: string;
  stats: string;
  seq: string;
  /** SET of hosts an operator paused; the member `*` pauses the whole partition. */
  paused: string;
  /** `trawl frontier rebuild`'s mark: the last fingerprint restored into this partition. */
  restored: string;
  /** HASH lease id -> the attempt (token) that fetched its URL and is recording it. */
  fetched: string;
  /**
   * HASH lease id -> "<worker member id>\n<attempt token>": which worker process holds the lease
   * (and perhaps its host's token) at the gate, until the lease is handed off, acknowledged or
   * requeued. When that worker's heartbeat lapses, `releaseHolder` frees them at once.
   */
  holders: string;
  /** STRING: the partition's data is intact (set at start and by a rebuild; gone with a wipe). */
  live: string;
  /**
   * STREAM: pages fetched and stored, waiting for the process stage (consumer group `process`);
   * an entry is deleted once its page is recorded.
   */
  process: string;
  /**
   * STREAM: as `process`, for pages whose host had nothing else queued when they were handed
   * off (the host's next fetch waits on their links): the process stage reads it first.
   */
  urgent: string;
  /** SET: hosts with URLs spilled to PostgreSQL whose back queues run low (TRAWL_FRONTIER_REDIS_MAX_URLS). */
  refill: string;
  /** STRING: the token of the refill under way (one at a time per partition). */
  refillLock: string;
}

export function frontierKeys(prefix: string, partition: number): FrontierKeys {
  const base = `${prefix}:{p${partition}}:`;
  return {
    base,
    ready: `${base}ready`,
    leases: `${base}leases`,
    leaseData: `${base}leasedata`,
    tombstones: `${base}tomb`,
    stats: `${base}stats`,
    seq: `${base}seq`,
    paused: `${base}paused`,
    restored: `${base}restored`,
    fetched: `${base}fetched`,
    holders: `${base}holders`,
    live: `${base}live`,
    process: `${base}process`,
    urgent: `${base}process:urgent`,
    refill: `${base}refill`,
    refillLock: `${base}refilling`,
  };
}

/** A refill's outcome mark (see settleRefill). */
export const refillMarkKey = (keys: FrontierKeys, token: string): string => `${keys.base}rf:${token}`;

export const hostKey = (keys: FrontierKeys, host: string): string => `${keys.base}h:${host}`;

/** The HyperLogLog of the hosts that link to `host` (its authority; see rank.ts). */
export const inLinksKey = (keys: FrontierKeys, host: string): string => `${keys.base}in:${host}`;

/**
 * HASH: the crawl's seed admission state (see `Admission`). Not a partition's: its own hash tag,
 * so on a Redis Cluster it lives in a slot of its own.
 */
export const admissionKey = (prefix: string): string => `${prefix}:{admission}`;
