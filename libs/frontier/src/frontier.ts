import { randomUUID } from 'node:crypto';
import type { Clock } from '@trawl/core';
import { bindScripts, loadScripts, type RedisClient, type ScriptCaller } from '@trawl/redis';
import { isDateVariant } from '@trawl/url';
import { decodeEntry, encodeEntry, type FrontierUrl, UrlFlag } from './entry.js';
import { type FrontierKeys, frontierKeys, hostKey, inLinksKey, refillMarkKey } from './keys.js';
import { entryTime } from './process-stream.js';
import { AUTHORITY_SATURATION, type HostRankOptions, type HostScoreParts, hostScore, NO_HOST_RANK, rankedHosts } from './rank.js';
import { HashRing } from './ring.js';

const SCRIPTS = loadScripts(import.meta.url, '../lua', [
  'pushUrls-4',
  'claimReady-6',
  'acquireHost-5',
  'releaseHost-2',
  'ackLeases-8',
  'handOff-4',
  'resumeHosts-2',
  'requeueLeases-5',
  'releaseHolder-5',
  'restoreUrls-3',
  'renewLease-2',
  'noteHosts-1',
  'takeRefill-2',
  'refillHosts-4',
  'settleRefill-2',
  'takeHost-3',
  'borrowHost-1',
  'returnHost-1',
]);
type ScriptName =
  | 'pushUrls'
  | 'claimReady'
  | 'acquireHost'
  | 'releaseHost'
  | 'ackLeases'
  | 'handOff'
  | 'resumeHosts'
  | 'requeueLeases'
  | 'releaseHolder'
  | 'restoreUrls'
  | 'renewLease'
  | 'noteHosts'
  | 'takeRefill'
  | 'refillHosts'
  | 'settleRefill'
  | 'takeHost'
  | 'borrowHost'
  | 'returnHost';

/** The member of a partition's paused set that pauses every host (never a host name). */
const ALL_HOSTS = '*';

/**
 * The expiry of a lease handed to the process stage: never, in practice (the year 2255). Its
 * stream entry keeps the URL from then on, and the ack removes both.
 */
export const HANDED_UNTIL = 9e12;

/** Largest number of URLs sent to one script call; bigger pushes are split. */
const PUSH_CHUNK = 1000;

/** `hostHeadUrls` unless set (TRAWL_FRONTIER_HOST_HEAD_URLS's default). */
const DEFAULT_HOST_HEAD_URLS = 16;

export interface FrontierOptions {
  /** Key namespace, e.g. "trawl" or a test's own prefix. */
  prefix: string;
  partitions: number;
  /** Priority bands per host (Mercator's front queues); higher bands are served first. */
  bands: number;
  /** How long a claimed URL may stay out before it is returned to its queue. */
  leaseMs: number;
  /** How long one fetch attempt may hold a host's token at most (the fetch deadline plus margin). */
  fetchHoldMs: number;
  /** When a job finds its host busy, how much later than the host's due time it tries again. */
  busyRetryMs: number;
  /** URLs ever queued per host; 0 for no limit. */
  maxUrlsPerHost: number;
  /**
   * The most queued URLs the frontier keeps in Redis, over all partitions (each takes its share);
   * past it, URLs are spilled: the caller keeps them in PostgreSQL, and a refill brings each
   * host's best back as its queue runs low. 0 or unset: no limit, nothing spills.
   */
  redisMaxUrls?: number;
  /**
   * With a cap: URLs of each host kept in Redis even past it (so a host never waits for a
   * refill), and the level a refill tops a host up to once it has half of it or fewer.
   */
  hostHeadUrls?: number;
  /**
   * A host left idle (nothing queued, no lease holding it) has its Redis state expire after this
   * long (0: never). Longer than any wait a lease of the host may still be in.
   */
  idleHostTtlMs?: number;
  /**
   * Claim only from partitions marked live (`markLive`): a partition whose Redis data was lost
   * loses the mark with it, and nothing is claimed from it until a rebuild sets it again. The
   * runtime sets this; a frontier built by hand (tests) claims regardless.
   */
  requireLiveMark?: boolean;
  /**
   * This worker process's member id (its membership heartbeat): the leases and host tokens it
   * takes at the gate are recorded as its holds, which `releaseHolder` frees at once when its
   * heartbeat lapses. Unset: holds end only with their leases and tokens.
   */
  holder?: string;
  /** How `claim` ranks ready hosts when more are due than it may claim (see rank.ts). Unset: by due time alone. */
  rank?: HostRankOptions;
  clock: Clock;
}

/**
 * Something learnt about a host that its rank is made of: another host links to it
 * (`linkedFrom`), or one of its seeds was given a priority (`seedPriority`, 0..1).
 */
export type HostNote = { host: string; linkedFrom: string } | { host: string; seedPriority: number };

/** A host's score (0..1) and its parts, as `claim` ranks it. */
export interface HostScore extends HostScoreParts {
  host: string;
  score: number;
}

export interface PushItem extends FrontierUrl {
  host: string;
  /** 0..1; mapped onto the bands. */
  priority: number;
  /** The band to queue it in, whatever its priority (a redirect target keeps its source's band). */
  band?: number;
  /** The URL pattern its variants are counted under (`variantKey` of @trawl/url), or none. */
  variantKey?: string | null;
}

export interface PushLimits {
  /** URLs ever queued per host (0: none). */
  maxUrlsPerHost?: number;
  /** URLs ever queued per host+path with different queries (0: none). */
  maxQueryVariants?: number;
  /** URLs ever queued per host and date pattern: one calendar's dates, in any of its forms (0: none). */
  maxDateVariants?: number;
  /**
   * The caller records spilled URLs in PostgreSQL (`PushResult.spills`), so past `redisMaxUrls`
   * they may spill. Without it every URL goes to Redis, cap or not (sitemaps, which have no
   * `urls` row; an operator's refresh).
   */
  spill?: boolean;
}

export type RefusalReason = 'host-budget' | 'query-variants';

export interface PushResult {
  pushed: number;
  /** Refused: the host's budget is spent. */
  refused: number;
  /** Refused: the path has had its share of query variants. */
  refusedVariants: number;
  /** Each refused item, by its position in the pushed array, and why. */
  refusals: { index: number; reason: RefusalReason }[];
  /** Items spilled past TRAWL_FRONTIER_REDIS_MAX_URLS: queued, but kept by the caller in PostgreSQL. */
  spills: Spill[];
}

/** One URL `trawl frontier rebuild` restores from PostgreSQL (see `Frontier.restore`). */
export interface RestoreItem extends FrontierUrl {
  host: string;
  /** The URL's fingerprint (its `urls.url_hash`): restores go in ascending fingerprint order. */
  hash: Buffer;
  priority: number;
  /** true: queue it; false: only count it in its host's budget (it was queued once, and is settled). */
  queue: boolean;
  /** Queued, but waiting in PostgreSQL (spilled): counted in its host's spilled URLs, refilled from there. */
  spilled?: boolean;
}

/** A URL the frontier spilled: its caller keeps it in PostgreSQL with this band and entry. */
export interface Spill {
  /** Its position in the pushed array. */
  index: number;
  band: number;
  /** Its back-queue entry, as a refill gives it back (`RefillItem.entry`). */
  entry: string;
}

/** A refill under way in one partition (see `Frontier.beginRefill`). */
export interface RefillTicket {
  partition: number;
  /** "p<partition>:<uuid>": PostgreSQL tags the rows this refill takes with it. */
  token: string;
  /** The hosts to refill, and how many URLs each wants at most. */
  hosts: { host: string; wanted: number }[];
}

/** One spilled URL a refill puts back, in its host's order (best first). */
export interface RefillItem {
  host: string;
  band: number;
  entry: string;
}

export interface Lease extends FrontierUrl {
  id: string;
  partition: number;
  host: string;
  band: number;
  /** When the host may be fetched (a lease claimed ahead of time waits for it at the gate). */
  dueAt: number;
}

/** What a job needs to pass the gate; a job without a live lease is adopted with this data. */
export interface GateTicket {
  partition: number;
  host: string;
  leaseId: string;
  /** Unique per attempt (BullMQ's job lock token): two attempts of one lease never fetch together. */
  token: string;
  band: number;
  entry: FrontierUrl;
}

/**
 * A host's health as the politeness model keeps it (consecutive failures, back-off), and as the
 * block detector keeps it (refusals in a row, proxy tier level; absent: unchanged on release).
 */
export interface HostHealthState {
  streak: number;
  backoffMs: number;
  blocks?: number;
  level?: number;
}

/** A render stage's takeover of a lease's host (see `Frontier.takeHost`). */
export type HostTakeover = { kind: 'ok'; /** The host's due time: no request under the token before it. */ dueAt: number } | { kind: 'busy'; at: number } | { kind: 'stale' } | { kind: 'handed' } | { kind: 'lost' };

/**
 * One try of another host's gate for a request a rendered page makes (see `Frontier.borrowHost`):
 * granted (start no sooner than `dueAt`, then `returnHost`), or refused with why.
 */
export type HostBorrow =
  | {
      kind: 'granted';
      /** What `returnHost` returns. */
      token: string;
      /** The host's due time, at most the bound ahead. */
      dueAt: number;
      health: HostHealthState;
    }
  | { kind: 'not-due'; at: number }
  | { kind: 'busy'; at: number }
  | { kind: 'paused' };

export type GateDecision =
  | {
      kind: 'ok';
      /** The host's due time (when politeness allowed this fetch), epoch ms. */
      dueAt: number;
      health: HostHealthState;
      /**
       * A copy of this URL flagged Verify was acknowledged lately (it went first, and this copy
       * was queued beside it): ask PostgreSQL before fetching, as a lease flagged Verify does.
       */
      verify?: true;
    }
  | { kind: 'not-due'; at: number }
  | { kind: 'busy'; at: number }
  | { kind: 'stale' }
  /** An operator paused the host (or the crawl): the URL went back to its queue; drop the job. */
  | { kind: 'paused' };

export interface ClaimResult {
  leases: Lease[];
  /** Due time of the earliest waiting host, or null when no host waits. */
  nextDueAt: number | null;
  /** Leases of dead workers returned to their queues by this call. */
  expired: number;
  /** An operator paused the whole crawl: nothing was claimed. */
  paused?: boolean;
}

export interface PartitionStats {
  partition: number;
  /** URLs waiting in back queues (in Redis). */
  queued: number;
  /** URLs queued but waiting in PostgreSQL (spilled past TRAWL_FRONTIER_REDIS_MAX_URLS). */
  spilled: number;
  /** URLs leased out (dispatched, being fetched, or waiting for a retry). */
  leased: number;
  /** Hosts with queued URLs that no lease holds. */
  hostsWaiting: number;
  /** Of those, hosts whose due time has passed. */
  hostsReady: number;
  /** Leases acknowledged since the namespace was created. */
  done: number;
  /** Fetched pages handed to the process stage and not yet recorded (its backlog). */
  processBacklog: number;
  /** When the oldest of them was handed off (epoch ms, Redis's clock), or null when there is none. */
  processOldestAt: number | null;
}

export interface FrontierStats extends Omit<PartitionStats, 'partition' | 'processOldestAt'> {
  /** The oldest page waiting for the process stage over all partitions (epoch ms), or null. */
  processOldestAt: number | null;
  partitions: PartitionStats[];
}

export class Frontier {
  private readonly scripts: Record<ScriptName, ScriptCaller>;
  private readonly ring: HashRing<number>;
  private readonly keys: FrontierKeys[];
  private holder: string;

  constructor(
    private readonly redis: RedisClient,
    readonly options: FrontierOptions,
  ) {
    if (!Number.isInteger(options.partitions) || options.partitions < 1) throw new Error('partitions must be a positive integer');
    if (!Number.isInteger(options.bands) || options.bands < 1) throw new Error('bands must be a positive integer');
    this.scripts = bindScripts<ScriptName>(redis, SCRIPTS);
    this.ring = new HashRing(Array.from({ length: options.partitions }, (_, p) => p));
    this.keys = Array.from({ length: options.partitions }, (_, p) => frontierKeys(options.prefix, p));
    this.holder = options.holder ?? '';
  }

  /** From now on, holds taken at the gate are this worker member's (see `FrontierOptions.holder`). */
  holdAs(member: string): void {
    this.holder = member;
  }

  /** The worker member holds are recorded for ('' when none). */
  get holderId(): string {
    return this.holder;
  }

  get partitions(): number {
    return this.options.partitions;
  }

  partitionOf(host: string): number {
    return this.options.partitions === 1 ? 0 : this.ring.owner(host);
  }

  /** The band an item is queued in: the one it names (clamped to the bands there are), else its priority's. */
  private bandFor(item: PushItem): number {
    return item.band === undefined ? this.bandOf(item.priority) : Math.min(this.options.bands - 1, Math.max(0, Math.floor(item.band)));
  }

  bandOf(priority: number): number {
    const clamped = Math.min(1, Math.max(0, Number.isFinite(priority) ? priority : 0));
    return Math.min(this.options.bands - 1, Math.floor(clamped * this.options.bands));
  }

  keysOf(partition: number): FrontierKeys {
    const keys = this.keys[partition];
    if (!keys) throw new Error(`no partition ${partition} (have ${this.options.partitions})`);
    return keys;
  }

  /**
   * Appends URLs (already deduplicated by the seen-set) to their hosts' back queues. A host that
   * has ever been given `maxUrlsPerHost` URLs refuses more (default: the frontier's option); a
   * path that has had `maxQueryVariants` different queries, or a date pattern (a calendar) that
   * has had `maxDateVariants` dates, refuses more of them.
   */
  async push(items: readonly PushItem[], limits: PushLimits = {}): Promise<PushResult> {
    const maxUrlsPerHost = limits.maxUrlsPerHost ?? this.options.maxUrlsPerHost;
    const maxQueryVariants = limits.maxQueryVariants ?? 0;
    const maxDateVariants = limits.maxDateVariants ?? 0;
    const byPartition = new Map<number, { item: PushItem; index: number }[]>();
    items.forEach((item, index) => {
      const partition = this.partitionOf(item.host);
      let list = byPartition.get(partition);
      if (!list) byPartition.set(partition, (list = []));
      list.push({ item, index });
    });
    const now = this.options.clock.now();
    const calls: Promise<void>[] = [];
    const result: PushResult = { pushed: 0, refused: 0, refusedVariants: 0, refusals: [], spills: [] };
    const cap = limits.spill ? this.partitionCap() : 0;
    for (const [partition, list] of byPartition) {
      const keys = this.keysOf(partition);
      for (let i = 0; i < list.length; i += PUSH_CHUNK) {
        const chunk = list.slice(i, i + PUSH_CHUNK);
        // A call id per call: pushUrls runs once even if the client resends it after a reconnect.
        const args: (string | number)[] = [keys.base, now, maxUrlsPerHost, randomUUID(), this.options.requireLiveMark ? 1 : 0, cap, this.hostHead()];
        const sent = chunk.map(({ item }) => ({ band: this.bandFor(item), entry: encodeEntry(item, item.host) }));
        chunk.forEach(({ item }, j) => {
          const variant = item.variantKey ?? '';
          const variantCap = variant === '' ? 0 : isDateVariant(variant) ? maxDateVariants : maxQueryVariants;
          const { band, entry } = sent[j] as { band: number; entry: string };
          args.push(item.host, band, entry, variant, variantCap);
        });
        calls.push(
          this.scripts.pushUrls([keys.ready, keys.stats, keys.live, keys.refill], args).then((reply) => {
            const [pushed, refused, refusedVariants, verdicts] = reply as [number, number, number, string];
            result.pushed += Number(pushed);
            result.refused += Number(refused);
            result.refusedVariants += Number(refusedVariants);
            for (let j = 0; j < chunk.length; j += 1) {
              const verdict = verdicts[j];
              const index = (chunk[j] as { index: number }).index;
              if (verdict === 'b' || verdict === 'v') result.refusals.push({ index, reason: verdict === 'b' ? 'host-budget' : 'query-variants' });
              else if (verdict === 's') result.spills.push({ index, ...(sent[j] as { band: number; entry: string }) });
            }
          }),
        );
      }
    }
    await Promise.all(calls);
    result.refusals.sort((a, b) => a.index - b.index);
    result.spills.sort((a, b) => a.index - b.index);
    return result;
  }

  /** Each partition's share of `redisMaxUrls` (0: no cap). */
  private partitionCap(): number {
    const max = this.options.redisMaxUrls ?? 0;
    return max > 0 ? Math.max(1, Math.ceil(max / this.options.partitions)) : 0;
  }

  /** URLs of a host kept in Redis past the cap (0 when nothing spills). */
  private hostHead(): number {
    return this.partitionCap() > 0 ? Math.max(1, this.options.hostHeadUrls ?? DEFAULT_HOST_HEAD_URLS) : 0;
  }

  /** Whether this frontier spills past a cap (`redisMaxUrls`), so it needs refilling. */
  get spills(): boolean {
    return this.partitionCap() > 0;
  }

  /**
   * Begins a refill of one partition: takes its refill lock (one refill of a partition at a time,
   * so each host's URLs come back in order) and names up to `maxHosts` hosts whose back queues run
   * low while PostgreSQL holds more of their URLs. Null: none needs one, or another refill of the
   * partition is under way. The caller reads each host's best spilled URLs, tags them with the
   * ticket's token, and lands them with `landRefill` within `lockMs` (else the refill is void).
   */
  async beginRefill(partition: number, maxHosts: number, lockMs: number): Promise<RefillTicket | null> {
    const keys = this.keysOf(partition);
    const token = `p${partition}:${randomUUID()}`;
    const raw = (await this.scripts.takeRefill([keys.refill, keys.refillLock], [keys.base, token, Math.max(1, Math.floor(lockMs)), Math.max(1, Math.floor(maxHosts)), this.hostHead(), this.options.clock.now()])) as (string | number)[];
    if (raw.length === 0) return null;
    const hosts: RefillTicket['hosts'] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) hosts.push({ host: String(raw[i]), wanted: Number(raw[i + 1]) });
    return { partition, token, hosts };
  }

  /**
   * Lands a refill: appends `items` (each host's best spilled URLs, in order) to their back
   * queues, at most once per token. `found`: how many URLs the refill found of each host asked
   * for (a host whose count says PostgreSQL holds URLs of it, but of which none is found for
   * `graceMs`, has its count reset). Returns 'landed', or why not: 'applied' (it landed before)
   * or 'void' (its lock lapsed, or `settleRefill` voided it): then nothing changed.
   */
  async landRefill(ticket: RefillTicket, found: ReadonlyMap<string, number>, items: readonly RefillItem[], graceMs: number): Promise<'landed' | 'applied' | 'void'> {
    const keys = this.keysOf(ticket.partition);
    const args: (string | number)[] = [keys.base, this.options.clock.now(), ticket.token, this.hostHead(), graceMs, ticket.hosts.length];
    for (const { host } of ticket.hosts) args.push(host, found.get(host) ?? 0);
    for (const item of items) args.push(item.host, item.band, item.entry);
    const [landed, outcome] = (await this.scripts.refillHosts([keys.ready, keys.stats, keys.refill, keys.refillLock], args)) as [number, string | number];
    return Number(landed) === 1 ? 'landed' : outcome === 'applied' ? 'applied' : 'void';
  }

  /**
   * The outcome of a refill whose rows are still tagged with its token (its process died or
   * failed before writing it): 'applied' if it landed; else 'void', for good. Frees the
   * partition's refill lock if that refill holds it.
   */
  async settleRefill(partition: number, token: string): Promise<'applied' | 'void'> {
    const keys = this.keysOf(partition);
    const outcome = await this.scripts.settleRefill([refillMarkKey(keys, token), keys.refillLock], [token]);
    return outcome === 'applied' ? 'applied' : 'void';
  }

  /**
   * Leases the next URL of up to `max` due hosts of one partition (hosts due within `leadMs`
   * count as due: their jobs wait at the gate); also expires dead leases.
   */
  async claim(partition: number, max: number, options: { leadMs?: number; expireLimit?: number } = {}): Promise<ClaimResult> {
    const keys = this.keysOf(partition);
    const rank = this.options.rank ?? NO_HOST_RANK;
    const raw = (await this.scripts.claimReady(
      [keys.ready, keys.leases, keys.leaseData, keys.tombstones, keys.stats, keys.seq],
      [
        keys.base,
        this.options.clock.now(),
        Math.max(0, Math.floor(max)),
        this.options.leaseMs,
        this.options.bands,
        `p${partition}`,
        options.expireLimit ?? 200,
        Math.max(0, Math.floor(options.leadMs ?? 0)),
        this.options.requireLiveMark ? 1 : 0,
        Math.max(0, Math.floor(rank.leadMs)),
        rankedHosts(Math.max(0, Math.floor(max)), Math.floor(rank.window)),
        rank.weights.authority,
        rank.weights.seed,
        AUTHORITY_SATURATION,
        this.hostHead(),
      ],
    )) as (string | number)[];
    const leases: Lease[] = [];
    for (let i = 2; i + 5 <= raw.length; i += 5) {
      const host = String(raw[i + 1]);
      const entry = decodeEntry(String(raw[i + 3]), host);
      leases.push({ ...entry, id: String(raw[i]), host, band: Number(raw[i + 2]), dueAt: Number(raw[i + 4]), partition });
    }
    const nextDue = Number(raw[0]);
    if (nextDue === -2) return { leases, nextDueAt: null, expired: Number(raw[1]), paused: true };
    return { leases, nextDueAt: nextDue < 0 ? null : nextDue, expired: Number(raw[1]) };
  }

  /**
   * Records what hosts' ranks are made of (see `HostNote`), one script call per partition and
   * chunk. Links between pages of one host say nothing of its authority: leave them out.
   */
  async noteHosts(notes: readonly HostNote[]): Promise<void> {
    const byPartition = new Map<number, (string | number)[]>();
    for (const note of notes) {
      const partition = this.partitionOf(note.host);
      let args = byPartition.get(partition);
      if (!args) byPartition.set(partition, (args = []));
      if ('linkedFrom' in note) args.push(note.host, 'l', note.linkedFrom);
      else args.push(note.host, 's', Math.min(1, Math.max(0, note.seedPriority)));
    }
    const ttl = Math.max(0, Math.floor(this.options.idleHostTtlMs ?? 0));
    const calls: Promise<unknown>[] = [];
    for (const [partition, args] of byPartition) {
      const keys = this.keysOf(partition);
      for (let i = 0; i < args.length; i += PUSH_CHUNK * 3) {
        calls.push(this.scripts.noteHosts([keys.ready], [keys.base, ttl, ...args.slice(i, i + PUSH_CHUNK * 3)]));
      }
    }
    await Promise.all(calls);
  }

  /** The scores `claim` ranks these hosts by, with their parts (for operators and tests). */
  async hostScores(hosts: readonly string[]): Promise<HostScore[]> {
    const weights = (this.options.rank ?? NO_HOST_RANK).weights;
    return Promise.all(
      hosts.map(async (host) => {
        const keys = this.keysOf(this.partitionOf(host));
        const [inLinkHosts, seed] = await Promise.all([this.redis.pfcount(inLinksKey(keys, host)), this.redis.hget(hostKey(keys, host), 'seed')]);
        const parts = { inLinkHosts: Number(inLinkHosts), seedPriority: Number(seed ?? 0) };
        return { host, ...parts, score: hostScore(parts, weights) };
      }),
    );
  }

  /** Marks every partition live (the crawl's data is intact): see `requireLiveMark`. */
  async markLive(): Promise<void> {
    await Promise.all(this.keys.map((keys) => this.redis.set(keys.live, '1')));
  }

  /**
   * The host gate: may this attempt fetch from the host now — or, with `at` (a moment a round
   * trip ahead, when the caller will start its request and not before), then? Asking as of `at`
   * takes the round trip off the politeness clock; the caller must not start before `at`.
   */
  async acquire(ticket: GateTicket, options: { at?: number } = {}): Promise<GateDecision> {
    const keys = this.keysOf(ticket.partition);
    const now = Math.max(this.options.clock.now(), Math.ceil(options.at ?? 0));
    const [code, at, streak, backoff, blocks, level, verify] = (await this.scripts.acquireHost(
      [keys.ready, keys.leases, keys.leaseData, keys.tombstones, keys.stats],
      [
        keys.base,
        ticket.host,
        ticket.leaseId,
        ticket.token,
        now,
        this.options.leaseMs,
        this.options.fetchHoldMs,
        ticket.band,
        encodeEntry(ticket.entry, ticket.host),
        this.options.busyRetryMs,
        this.holder,
      ],
    )) as [number, number, number?, number?, number?, number?, number?];
    switch (code) {
      case 1:
        return {
          kind: 'ok',
          dueAt: Number(at),
          health: { streak: Number(streak ?? 0), backoffMs: Number(backoff ?? 0), blocks: Number(blocks ?? 0), level: Number(level ?? 0) },
          ...(Number(verify ?? 0) === 1 ? { verify: true as const } : {}),
        };
      case 2:
        return { kind: 'not-due', at: Number(at) };
      case 3:
        return { kind: 'busy', at: Number(at) };
      case 4:
        return { kind: 'stale' };
      case 5:
        return { kind: 'paused' };
      default:
        throw new Error(`acquireHost returned unknown code ${code}`);
    }
  }

  /**
   * A fetch from the host has ended: the host may be fetched again from `nextDueAt`. Options:
   * `leaseUntil` keeps the lease alive that long (a retry waits in the queue); `health` records
   * the host's new failure streak and back-off; `keepHost` keeps the host held for this lease
   * (its job runs again at the due time, e.g. after fetching robots.txt); `fetchedAliveUntil`
   * says this attempt fetched the lease's URL and goes on to record it: no other attempt of the
   * lease passes the gate while it is alive (until then, and as long as its renewals move it on:
   * `extendLease` with `heartbeat`) and until it is acknowledged.
   */
  async release(
    ticket: Pick<GateTicket, 'partition' | 'host' | 'leaseId' | 'token'>,
    nextDueAt: number,
    options: { leaseUntil?: number; health?: HostHealthState; keepHost?: boolean; fetchedAliveUntil?: number } = {},
  ): Promise<boolean> {
    const keys = this.keysOf(ticket.partition);
    const held = await this.scripts.releaseHost(
      [keys.ready, keys.leases],
      [
        keys.base,
        ticket.host,
        ticket.leaseId,
        ticket.token,
        this.options.clock.now(),
        Math.ceil(nextDueAt),
        Math.ceil(options.leaseUntil ?? 0),
        options.health ? options.health.streak : '',
        options.health ? Math.round(options.health.backoffMs) : '',
        options.keepHost ? 1 : 0,
        Math.max(0, Math.floor(this.options.idleHostTtlMs ?? 0)),
        options.fetchedAliveUntil === undefined ? '' : Math.ceil(options.fetchedAliveUntil),
        options.health?.blocks === undefined ? '' : options.health.blocks,
        options.health?.level ?? 0,
      ],
    );
    return Number(held) === 1;
  }

  /**
   * Keeps a live lease out until at least `until` (a retry waiting in the queue, or slow work
   * after the fetch); never shortens it. A lease that already expired is not revived: its URL is
   * back in the frontier. `heartbeat`: the attempt that fetched the URL (see `release`) is alive
   * until `aliveUntil`. Returns whether the lease is live.
   */
  async extendLease(partition: number, leaseId: string, until: number, heartbeat?: { token: string; aliveUntil: number }): Promise<boolean> {
    const keys = this.keysOf(partition);
    const live = await this.scripts.renewLease([keys.leases, keys.fetched], [leaseId, Math.ceil(until), heartbeat?.token ?? '', Math.ceil(heartbeat?.aliveUntil ?? 0)]);
    return Number(live) === 1;
  }

  /**
   * The attempt that fetched this lease's URL (`release(..., { fetched: true })`) will not record
   * it after all (it failed and the job is retried, or the process stops on a fatal fault): let
   * the lease's next attempt through the gate at once instead of after the lease.
   */
  async clearFetched(partition: number, leaseId: string): Promise<void> {
    await this.redis.hdel(this.keysOf(partition).fetched, leaseId);
  }

  /**
   * A render stage takes over (or, called again, keeps) the host a fetch attempt (`fromToken`)
   * left held for this lease's page: see lua/takeHost. `aliveMs`: how long the token is this
   * attempt's without another call (a dead render stage's host is taken over after that).
   * `retake`: a claim the lease's earlier delivery freed (it died before handing the page on) is
   * taken again when no other live lease holds the host; only where no address group's turn goes
   * with the host.
   */
  async takeHost(
    ticket: Pick<GateTicket, 'partition' | 'host' | 'leaseId' | 'token'>,
    fromToken: string,
    aliveMs: number,
    options: { retake?: boolean } = {},
  ): Promise<HostTakeover> {
    const keys = this.keysOf(ticket.partition);
    const [code, at] = (await this.scripts.takeHost(
      [keys.leases, keys.fetched, keys.ready],
      [keys.base, ticket.host, ticket.leaseId, fromToken, ticket.token, this.options.clock.now(), Math.ceil(aliveMs), options.retake ? 1 : 0],
    )) as [number, number];
    switch (Number(code)) {
      case 1:
        return { kind: 'ok', dueAt: Number(at) };
      case 3:
        return { kind: 'busy', at: Number(at) };
      case 4:
        return { kind: 'stale' };
      case 5:
        return { kind: 'handed' };
      case 6:
        return { kind: 'lost' };
      default:
        throw new Error(`takeHost returned unknown code ${code}`);
    }
  }

  /**
   * One non-blocking try of a host's gate for a single request another host's rendered page makes
   * (see lua/borrowHost): granted only when no token of the host is out and it is due within
   * `withinMs`, else refused at once. Under a grant the caller starts its request no sooner than
   * `dueAt` and ends with `returnHost(host, token, …)`; the token lapses after `holdMs` if it
   * never does (a job of the host's own that finds it at the gate asks again shortly).
   */
  async borrowHost(host: string, options: { holdMs: number; withinMs: number }): Promise<HostBorrow> {
    const keys = this.keysOf(this.partitionOf(host));
    const token = `borrow:${randomUUID()}`;
    const [code, at, streak, backoff] = (await this.scripts.borrowHost(
      [keys.paused],
      [keys.base, host, token, this.options.clock.now(), Math.max(1, Math.ceil(options.holdMs)), Math.max(0, Math.floor(options.withinMs))],
    )) as [number, number, number?, number?];
    switch (Number(code)) {
      case 1:
        return { kind: 'granted', token, dueAt: Number(at), health: { streak: Number(streak ?? 0), backoffMs: Number(backoff ?? 0) } };
      case 2:
        return { kind: 'not-due', at: Number(at) };
      case 3:
        return { kind: 'busy', at: Number(at) };
      case 5:
        return { kind: 'paused' };
      default:
        throw new Error(`borrowHost returned unknown code ${code}`);
    }
  }

  /**
   * A borrowed request has ended (response read, or failed): the host's due time moves forward to
   * `nextDueAt` and its token is free. Returns whether the token was still this borrow's.
   */
  async returnHost(host: string, token: string, nextDueAt: number): Promise<boolean> {
    const keys = this.keysOf(this.partitionOf(host));
    const held = await this.scripts.returnHost(
      [keys.ready],
      [keys.base, host, token, this.options.clock.now(), Math.ceil(nextDueAt), Math.max(0, Math.floor(this.options.idleHostTtlMs ?? 0))],
    );
    return Number(held) === 1;
  }

  /**
   * A lease's page was fetched by `token` and handed to a render stage (its job is queued): until
   * `aliveUntil` (the lease's expiry; render stages renew it with the lease, `extendLease` with
   * this token's heartbeat) no other attempt of the lease passes the gate, so a fetch job of the
   * lease redelivered meanwhile (its lock lapsed) waits rather than fetch the page again. A mark
   * already there (a render stage's, or its hand-off's) is left alone.
   */
  async markHandedToRender(partition: number, leaseId: string, token: string, aliveUntil: number): Promise<void> {
    await this.redis.hsetnx(this.keysOf(partition).fetched, leaseId, `${token} ${Math.ceil(aliveUntil)}`);
  }

  /**
   * This worker passes a lease it holds at the gate to another stage (a render stage, which takes
   * the host over with the same token): the lease is no longer among this worker's holds, so its
   * death (`releaseHolder`) does not send the URL back to be fetched again.
   */
  async passHold(partition: number, leaseId: string): Promise<void> {
    await this.redis.hdel(this.keysOf(partition).holders, leaseId);
  }

  /**
   * The URLs of these leases are finished; `entries` are the process stage's stream entries of
   * the same pages (as `handOff` returned them), acknowledged and deleted in the same step.
   * Returns how many leases were still live.
   */
  async ack(partition: number, leaseIds: readonly string[], entries: readonly string[] = []): Promise<number> {
    if (leaseIds.length === 0 && entries.length === 0) return 0;
    const keys = this.keysOf(partition);
    return Number(
      await this.scripts.ackLeases(
        [keys.leases, keys.leaseData, keys.stats, keys.tombstones, keys.fetched, keys.process, keys.urgent, keys.ready],
        [this.options.clock.now(), leaseIds.length, ...leaseIds, ...entries],
      ),
    );
  }

  /** Pages of a partition handed to the process stage and not yet recorded (its process streams' lengths). */
  async processDepth(partition: number): Promise<number> {
    const keys = this.keysOf(partition);
    const [plain, urgent] = await Promise.all([this.redis.xlen(keys.process), this.redis.xlen(keys.urgent)]);
    return plain + urgent;
  }

  /**
   * Hands a lease's URL, fetched and stored by this attempt (`token`), to the process stage: one
   * entry carrying `payload` on one of the partition's process streams, in the same step as the
   * lease stops expiring (see lua/handOff). The page goes to the urgent stream, which the process
   * stage reads first, when its `host` has nothing else queued: the host's next fetch waits on
   * the page's links. Returns the entry's id ("u:<id>" on the urgent stream), or null when the
   * lease is no longer this attempt's (it expired or was acknowledged meanwhile): nothing was
   * handed off. `continuing`: the caller carries on for the lease's fetch (a render stage, with
   * the page a fetch attempt left it), so another attempt's `fetched` mark does not stop it.
   */
  async handOff(partition: number, leaseId: string, token: string, payload: string, host = '', continuing = false): Promise<string | null> {
    const keys = this.keysOf(partition);
    const entry = await this.scripts.handOff([keys.leases, keys.fetched, keys.process, keys.urgent], [leaseId, token, payload, HANDED_UNTIL, host, continuing ? '1' : '']);
    return typeof entry === 'string' ? entry : null;
  }

  /**
   * Live leases of a partition that expire no later than `maxExpiry` (i.e. were claimed or last
   * extended at least `leaseMs − (maxExpiry − now)` ago), oldest first: `limit` of them from
   * the `offset`-th on.
   */
  async leasesExpiringBy(partition: number, maxExpiry: number, limit = 1000, offset = 0): Promise<string[]> {
    const keys = this.keysOf(partition);
    return this.redis.zrangebyscore(keys.leases, '-inf', Math.floor(maxExpiry), 'LIMIT', offset, limit);
  }

  /**
   * Returns live leases' URLs to the front of their queues now (flagged Verify), leaving
   * tombstones: for leases whose fetch job does not exist (a dispatcher died between claiming
   * and adding the jobs). A lease whose URL was fetched is left alone (its page is on its way to
   * the record). Returns how many were requeued.
   */
  async requeue(partition: number, leaseIds: readonly string[]): Promise<number> {
    if (leaseIds.length === 0) return 0;
    const keys = this.keysOf(partition);
    return Number(
      await this.scripts.requeueLeases([keys.ready, keys.leases, keys.leaseData, keys.tombstones, keys.stats], [keys.base, this.options.clock.now(), ...leaseIds]),
    );
  }

  /**
   * A worker process stopped heartbeating: frees, in every partition, the leases and host tokens
   * it held at the gate, and the leases of `jobs` (by partition: the fetch jobs it had taken and
   * not yet brought to the gate; see the script releaseHolder). Returns how many leases were
   * requeued.
   */
  async releaseHolder(member: string, jobs: ReadonlyMap<number, readonly { leaseId: string; token: string }[]> = new Map()): Promise<number> {
    if (member === '') return 0;
    const now = this.options.clock.now();
    const counts = await Promise.all(
      this.keys.map((keys, p) =>
        this.scripts.releaseHolder(
          [keys.ready, keys.leases, keys.leaseData, keys.tombstones, keys.stats],
          [keys.base, now, member, ...(jobs.get(p) ?? []).filter((j) => /^\S+$/.test(j.leaseId) && /^\S+$/.test(j.token)).map((j) => `${j.leaseId} ${j.token}`)],
        ),
      ),
    );
    return counts.reduce<number>((sum, n) => sum + Number(n), 0);
  }

  /**
   * `trawl frontier rebuild`: puts URLs back from PostgreSQL after Redis lost them. Items must
   * come in ascending fingerprint order across calls of one rebuild (`generation`); each
   * partition remembers the last fingerprint it restored, so running a rebuild again, or two at
   * once, never queues a URL twice. Queued URLs carry the Verify flag: one recorded while the
   * rebuild ran is not fetched again. No restored host is due before `notBefore`.
   */
  async restore(generation: string, items: readonly RestoreItem[], notBefore = 0): Promise<{ queued: number; counted: number; skipped: number }> {
    if (!/^\S+$/.test(generation)) throw new Error(`invalid rebuild generation: ${JSON.stringify(generation)}`);
    const byPartition = new Map<number, RestoreItem[]>();
    for (const item of items) {
      const partition = this.partitionOf(item.host);
      let list = byPartition.get(partition);
      if (!list) byPartition.set(partition, (list = []));
      list.push(item);
    }
    const now = this.options.clock.now();
    const total = { queued: 0, counted: 0, skipped: 0 };
    // Chunks of one partition run one after another: the partition's mark moves in order.
    await Promise.all(
      [...byPartition].map(async ([partition, list]) => {
        const keys = this.keysOf(partition);
        for (let i = 0; i < list.length; i += PUSH_CHUNK) {
          const args: (string | number)[] = [keys.base, now, generation, Math.ceil(notBefore)];
          for (const item of list.slice(i, i + PUSH_CHUNK)) {
            const entry = encodeEntry({ ...item, flags: item.flags | UrlFlag.Verify }, item.host);
            args.push(item.hash.toString('hex'), item.queue ? (item.spilled ? 's' : 'q') : 'c', item.host, this.bandOf(item.priority), entry);
          }
          const [queued, counted, skipped] = (await this.scripts.restoreUrls([keys.ready, keys.stats, keys.restored], args)) as [number, number, number];
          total.queued += Number(queued);
          total.counted += Number(counted);
          total.skipped += Number(skipped);
        }
      }),
    );
    return total;
  }

  /**
   * URLs queued over all partitions, in Redis's back queues and spilled to PostgreSQL: counters
   * per partition (kept by the scripts that push, claim and refill), so it costs one HMGET a
   * partition however deep the frontier.
   */
  async queuedCount(): Promise<number> {
    const counts = await Promise.all(this.keys.map((keys) => this.redis.hmget(keys.stats, 'queued', 'spilled')));
    return counts.flat().reduce((sum, n) => sum + Number(n ?? 0), 0);
  }

  async stats(): Promise<FrontierStats> {
    const now = this.options.clock.now();
    // One pipeline per partition: a partition's keys share a slot, and on a Redis Cluster a
    // pipeline must stay within one (partitions may live on different nodes).
    const partitions = await Promise.all(
      this.keys.map(async (keys, p): Promise<PartitionStats> => {
        const replies = (await this.redis
          .pipeline()
          .hmget(keys.stats, 'queued', 'done', 'spilled')
          .zcard(keys.leases)
          .zcard(keys.ready)
          .zcount(keys.ready, '-inf', now)
          .xlen(keys.process)
          .xrange(keys.process, '-', '+', 'COUNT', 1)
          .xlen(keys.urgent)
          .xrange(keys.urgent, '-', '+', 'COUNT', 1)
          .exec()) ?? [];
        const [counters, leased, waiting, ready, backlog, oldest, urgentBacklog, urgentOldest] = replies.map(([error, value]) => {
          if (error) throw error;
          return value;
        });
        const [queued, done, spilled] = counters as (string | null)[];
        const firsts = [oldest, urgentOldest].flatMap((entries) => (entries as [string, string[]][]).slice(0, 1).map(([id]) => entryTime(id)));
        return {
          partition: p,
          queued: Number(queued ?? 0),
          spilled: Math.max(0, Number(spilled ?? 0)),
          done: Number(done ?? 0),
          leased: Number(leased),
          hostsWaiting: Number(waiting),
          hostsReady: Number(ready),
          processBacklog: Number(backlog) + Number(urgentBacklog),
          processOldestAt: firsts.length > 0 ? Math.min(...firsts) : null,
        };
      }),
    );
    const sum = (field: 'queued' | 'spilled' | 'leased' | 'hostsWaiting' | 'hostsReady' | 'done' | 'processBacklog'): number => partitions.reduce((s, p) => s + p[field], 0);
    const oldest = partitions.map((p) => p.processOldestAt).filter((at): at is number => at !== null);
    return {
      queued: sum('queued'),
      spilled: sum('spilled'),
      leased: sum('leased'),
      hostsWaiting: sum('hostsWaiting'),
      hostsReady: sum('hostsReady'),
      done: sum('done'),
      processBacklog: sum('processBacklog'),
      processOldestAt: oldest.length > 0 ? Math.min(...oldest) : null,
      partitions,
    };
  }

  /**
   * Operator pause: the hosts are never fetched until resumed. The dispatcher claims none of
   * their URLs, and the gate turns away any job of theirs (dispatched before the pause, retried,
   * added by hand), returning its URL to the frontier. The pause lives in each partition's
   * paused set in Redis (persist Redis with AOF; the dashboard also keeps it in PostgreSQL).
   */
  async pauseHosts(hosts: readonly string[]): Promise<void> {
    // One transaction per partition: a transaction may not span Redis Cluster slots.
    await Promise.all(
      [...this.byPartition(hosts)].map(([partition, list]) => {
        const keys = this.keysOf(partition);
        return this.redis.multi().sadd(keys.paused, ...list).zrem(keys.ready, ...list).exec();
      }),
    );
  }

  /** Resumes paused hosts: each goes back into its ready heap at its due time. Returns how many were paused. */
  async resumeHosts(hosts: readonly string[]): Promise<number> {
    const now = this.options.clock.now();
    const counts = await Promise.all(
      [...this.byPartition(hosts)].map(([partition, list]) => {
        const keys = this.keysOf(partition);
        return this.scripts.resumeHosts([keys.ready, keys.paused], [keys.base, now, ...list]);
      }),
    );
    return counts.reduce((sum: number, n) => sum + Number(n), 0);
  }

  pauseHost(host: string): Promise<void> {
    return this.pauseHosts([host]);
  }

  /**
   * Pauses a host the block detector judged blocked with no proxy tier left, keeping why on the
   * host (shown to operators; cleared by resuming it, like any pause).
   */
  async pauseBlocked(host: string, reason: string): Promise<void> {
    const keys = this.keysOf(this.partitionOf(host));
    await this.redis.multi().hset(hostKey(keys, host), 'blocked', reason).sadd(keys.paused, host).zrem(keys.ready, host).exec();
  }

  /**
   * Of the hosts paused one by one, those paused as blocked, each with its reason and the URLs it
   * has queued: a one-off crawl is over when these are all that is left.
   */
  async blockedHosts(): Promise<Array<{ host: string; reason: string; queued: number }>> {
    const { hosts } = await this.paused();
    const states = await Promise.all(
      hosts.map(async (host) => {
        const [reason, queued] = await this.redis.hmget(hostKey(this.keysOf(this.partitionOf(host)), host), 'blocked', 'n');
        return { host, reason, queued: Number(queued ?? 0) };
      }),
    );
    return states.filter((state): state is { host: string; reason: string; queued: number } => state.reason !== null);
  }

  async resumeHost(host: string): Promise<boolean> {
    return (await this.resumeHosts([host])) > 0;
  }

  /** Pauses the whole crawl: no partition claims anything, no job passes the gate. */
  async pauseAll(): Promise<void> {
    await Promise.all(this.keys.map((keys) => this.redis.sadd(keys.paused, ALL_HOSTS)));
  }

  /** Ends the crawl-wide pause (hosts paused one by one stay paused). */
  async resumeAll(): Promise<void> {
    const now = this.options.clock.now();
    await Promise.all(this.keys.map((keys) => this.scripts.resumeHosts([keys.ready, keys.paused], [keys.base, now, ALL_HOSTS])));
  }

  /** What is paused: the whole crawl (in any partition), and the hosts paused one by one. */
  async paused(): Promise<{ all: boolean; hosts: string[] }> {
    // One read per partition (each in its own cluster slot), all at once.
    const replies = await Promise.all(this.keys.map((keys) => this.redis.smembers(keys.paused)));
    let all = false;
    const hosts = new Set<string>();
    for (const members of replies) {
      for (const member of members) {
        if (member === ALL_HOSTS) all = true;
        else hosts.add(member);
      }
    }
    return { all, hosts: [...hosts].sort() };
  }

  /** Is this host paused (on its own, or with the whole crawl)? */
  async isPaused(host: string): Promise<boolean> {
    const keys = this.keysOf(this.partitionOf(host));
    const [own, all] = await Promise.all([this.redis.sismember(keys.paused, host), this.redis.sismember(keys.paused, ALL_HOSTS)]);
    return own === 1 || all === 1;
  }

  /**
   * A uniform random sample of the hosts with work (waiting in a ready heap, or held by a lease),
   * up to `perPartition` of each kind per partition: for operators' estimates (polite capacity,
   * hosts backing off) without reading every host.
   */
  async sampleHosts(perPartition: number): Promise<string[]> {
    // One pipeline per partition (a pipeline must stay in one cluster slot), all at once.
    const replies = await Promise.all(
      this.keys.map(async (keys) => {
        const [ready, leased] = ((await this.redis.pipeline().zrandmember(keys.ready, perPartition).hrandfield(keys.leaseData, perPartition, 'WITHVALUES').exec()) ?? []).map(
          ([error, reply]) => {
            if (error) throw error;
            return (reply as string[] | null) ?? [];
          },
        );
        return { ready: ready ?? [], leased: leased ?? [] };
      }),
    );
    const hosts = new Set<string>();
    for (const { ready, leased } of replies) {
      for (const host of ready) hosts.add(host);
      // leaseData values are "host\nband\nentry"
      for (let j = 1; j < leased.length; j += 2) hosts.add((leased[j] as string).split('\n', 1)[0] as string);
    }
    return [...hosts];
  }

  private byPartition(hosts: readonly string[]): Map<number, string[]> {
    const byPartition = new Map<number, string[]>();
    for (const host of new Set(hosts)) {
      if (host === ALL_HOSTS || host === '') throw new Error(`not a host name: ${JSON.stringify(host)}`);
      const partition = this.partitionOf(host);
      let list = byPartition.get(partition);
      if (!list) byPartition.set(partition, (list = []));
      list.push(host);
    }
    return byPartition;
  }

  /** A host's politeness state (for operators and tests). */
  async hostState(host: string): Promise<{
    due: number;
    claim: string | null;
    fetching: boolean;
    queued: number;
    /** Queued URLs waiting in PostgreSQL (spilled). */
    spilled: number;
    total: number;
    streak: number;
    backoffMs: number;
    /** Refusals in a row (the block detector's run). */
    blocks: number;
    /** Steps above its planned proxy tier the host has been moved. */
    level: number;
    /** Why the block detector paused it, or null. */
    blocked: string | null;
  }> {
    const keys = this.keysOf(this.partitionOf(host));
    const state = await this.redis.hgetall(hostKey(keys, host));
    return {
      due: Number(state.due ?? 0),
      claim: state.claim ?? null,
      fetching: state.tok !== undefined && Number(state.tokUntil ?? 0) > this.options.clock.now(),
      queued: Number(state.n ?? 0),
      spilled: Math.max(0, Number(state.sp ?? 0)),
      total: Number(state.total ?? 0),
      streak: Number(state.streak ?? 0),
      backoffMs: Number(state.backoff ?? 0),
      blocks: Number(state.blk ?? 0),
      level: Number(state.lvl ?? 0),
      blocked: state.blocked ?? null,
    };
  }
}
