import { type Config, FETCH_HOLD_MARGIN_MS, frontierMaxQueued } from '@trawl/config';
import { Counters, createDiscovery, type Discovery, PolicyFollower, PolicyStore, Timings } from '@trawl/model';
import { type Clock, OffsetClock, systemClock } from '@trawl/core';
import { Database } from '@trawl/db';
import type { Fetcher, ProxyRequestEvent, SigningKey } from '@trawl/fetch';
import { AddressGate, Admission, Frontier, type FrontierOptions } from '@trawl/frontier';
import type { FetchQueues } from '@trawl/queue';
import { createRedis, deleteByPrefix, type Redis, type RedisClient, redisTimeMs } from '@trawl/redis';
import { RobotsCache } from '@trawl/robots';
import { createBloomFilter, SeenSet, SeenSnapshots } from '@trawl/seen';
import { type ContentStore, createContentStore, createNamedObjects, type NamedObjects } from '@trawl/store';
import type { Logger } from '@trawl/telemetry';
import type * as HttpClient from './http-client.js';
import { checkNamespaceSettings, type NamespaceSettings, settingsRecorded, wipedMessage } from './namespace-settings.js';

export interface RuntimeOptions {
  config: Readonly<Config>;
  /** Resolved by the app (explicit, local default, or embedded). */
  redisUrl: string;
  databaseUrl: string;
  logger: Logger;
  /** Process role for connection names ("crawl", "worker", "scheduler"). */
  role: string;
  /** Override the clock (tests). Default: this machine's clock corrected to Redis server time. */
  clock?: Clock;
  /**
   * A runtime for a process stage alone (a worker's process thread): the HTTP client and BullMQ's
   * queues are never loaded — a fifth of a second of CPU at every start — and `fetcher` and
   * `queues` refuse (as does `signingKey` when TRAWL_SIGNATURE_KEY_FILE names a key).
   */
  processStageOnly?: boolean;
}

/** Roles whose processes add to the seen-set (seeds, discovered links): they create it at start. */
const PREPARES_SEEN = new Set(['crawl', 'scheduler', 'worker']);

/** The frontier as every trawl process opens it, from the configuration. */
export function frontierOptions(config: Config, prefix: string, clock: Clock): FrontierOptions {
  return {
    prefix,
    partitions: config.partitions,
    bands: config.dispatch.bands,
    leaseMs: config.worker.leaseMs,
    fetchHoldMs: config.fetch.deadlineMs + FETCH_HOLD_MARGIN_MS,
    busyRetryMs: 250,
    maxUrlsPerHost: config.policy.maxUrlsPerHost,
    idleHostTtlMs: config.dispatch.idleHostTtlMs,
    redisMaxUrls: config.dispatch.redisMaxUrls,
    hostHeadUrls: config.dispatch.hostHeadUrls,
    requireLiveMark: true,
    rank: {
      leadMs: config.dispatch.hostRankLeadMs,
      window: config.dispatch.hostRankWindow,
      weights: { authority: config.dispatch.priorityWeights.authority, seed: config.dispatch.priorityWeights.seed },
    },
    clock,
  };
}

/**
 * Seed admission on a bare Redis connection, for a command that opens no runtime (`trawl seed`):
 * the same state and threshold as a runtime's `admission`.
 */
export function openAdmission(config: Config, redis: RedisClient, clock: Clock = systemClock): Admission {
  return new Admission(redis, new Frontier(redis, frontierOptions(config, config.namespace, clock)), { prefix: config.namespace, maxQueued: frontierMaxQueued(config), clock });
}

/**
 * The adapters one trawl process works with, opened once from the configuration: Redis and
 * PostgreSQL connections, the frontier, the seen-set, the fetch queues, the crawl policy and the
 * counters. What only a fetch worker needs (the HTTP client, the content store) is built on first
 * use, so a scheduler or a dashboard never opens it. Apps compose their loops on a runtime and
 * close it on SIGTERM.
 */
/** A host the fetch stage judged blocked: the tier that refused it, and what was done. */
export interface BlockedHostEvent {
  host: string;
  /** The proxy tier that refused it (`none`: direct, or no proxies). */
  tier: string;
  action: 'escalated' | 'paused';
  reason: string;
  /** The tier it moved to (null: paused). */
  toTier: string | null;
}

export class Runtime {
  private blocking: Redis | undefined;
  private processConnection: Redis | undefined;
  private fetcherInstance: Fetcher | undefined;
  private addressGateInstance: AddressGate | undefined;
  private signingKeyInstance: SigningKey | null | undefined;
  private storeInstance: ContentStore | undefined;
  private admissionInstance: Admission | undefined;
  private snapshotObjects: NamedObjects | undefined;
  /** This process's timings (fetch lateness), for the metrics' histograms and a run's summary. */
  readonly timings = new Timings();
  private readonly proxyListeners = new Set<(event: ProxyRequestEvent) => void>();
  private readonly blockedListeners = new Set<(event: BlockedHostEvent) => void>();

  private constructor(
    readonly config: Readonly<Config>,
    readonly logger: Logger,
    readonly clock: Clock,
    readonly redis: Redis,
    /**
     * The connection of BullMQ's producers (the fetch, seeds and sweeps queues), apart from
     * `redis` (see `open`).
     */
    readonly queueRedis: Redis,
    readonly db: Database,
    readonly frontier: Frontier,
    readonly seen: SeenSet,
    /** The fetch queues (null: a process stage's runtime, which never loads BullMQ). */
    private readonly fetchQueues: FetchQueues | null,
    readonly robots: RobotsCache,
    readonly counters: Counters,
    readonly policyStore: PolicyStore,
    readonly policy: PolicyFollower,
    /** The crawl-wide settings this namespace was created with (and this process agrees with). */
    readonly settings: NamespaceSettings,
    private readonly redisUrl: string,
    private readonly databaseUrl: string,
    private readonly role: string,
    /** The HTTP client's module (null: a process stage's runtime). */
    private readonly http: typeof HttpClient | null,
  ) {}

  /** The fetch queues (not in a process stage's runtime). */
  get queues(): FetchQueues {
    if (this.fetchQueues === null) throw new Error('a process stage\'s runtime has no fetch queues (processStageOnly)');
    return this.fetchQueues;
  }

  /** The HTTP client's module, or why this runtime has none. */
  private httpClient(what: string): typeof HttpClient {
    if (this.http === null) throw new Error(`a process stage's runtime has no ${what} (processStageOnly)`);
    return this.http;
  }

  /** The servers this runtime connected to, for a thread of this process to open its own runtime on. */
  get servers(): { redisUrl: string; databaseUrl: string } {
    return { redisUrl: this.redisUrl, databaseUrl: this.databaseUrl };
  }

  static async open(options: RuntimeOptions): Promise<Runtime> {
    const { config, logger } = options;
    const name = `trawl:${config.namespace}:${options.role}:${process.pid}`;
    const redis = createRedis(options.redisUrl, { name, cluster: config.redisCluster });
    redis.on('error', (error) => logger.error({ err: error }, 'redis connection error'));
    // BullMQ defines its ~65 scripts on every connection it is given, and ioredis copies each
    // defined script onto every pipeline it builds — with auto-pipelining, one per tick that sends
    // a command. On trawl's own connection that copying was a tenth of a crawling thread's time;
    // BullMQ's producers get a connection of their own, which needs no auto-pipelining (they send
    // few commands, a bulk add as one MULTI).
    const queueRedis = createRedis(options.redisUrl, { name: `${name}:queues`, autoPipelining: false, cluster: config.redisCluster });
    queueRedis.on('error', (error) => logger.error({ err: error }, 'redis connection error (queues)'));
    let lastRetryLog = 0;
    const db = new Database({
      url: options.databaseUrl,
      schema: config.namespace,
      applicationName: name,
      retryMs: config.db.retryMs,
      onRetry: (error, waitedMs) => {
        // One line every few seconds while PostgreSQL is away, not one per waiting statement.
        if (Date.now() - lastRetryLog < 5000) return;
        lastRetryLog = Date.now();
        logger.warn({ err: error, waitedMs }, 'PostgreSQL unavailable: statements wait and retry (TRAWL_DB_RETRY_MS)');
      },
    });
    try {
      // What only the fetch stage, dispatch and operators' commands use: a process stage's runtime never loads it.
      const [http, queueModule] = options.processStageOnly ? [null, null] : await Promise.all([import('./http-client.js'), import('@trawl/queue')]);
      const clock = options.clock ?? (await redisClock(redis, logger));
      await db.migrate();
      const bloomOptions = { prefix: config.namespace, capacity: config.seen.capacity, errorRate: config.seen.errorRate, shards: config.seen.shards };
      const settings = await checkNamespaceSettings(
        redis,
        config,
        async (backend) => ((await createBloomFilter(redis, bloomOptions, backend)).backend === 'redisbloom' ? 'redisbloom' : 'lua'),
        () => db.hasUrls(),
      );
      // Said once here for every process but the rebuild itself (schedulers and `trawl crawl` say it again as they wait).
      if (settings.wiped && options.role !== 'rebuild') logger.error({ namespace: config.namespace }, wipedMessage(config.namespace));
      const frontier = new Frontier(redis, frontierOptions(config, config.namespace, clock));
      // An intact crawl's partitions are live (a crawl created before the mark existed gets it now).
      if (!settings.wiped) await frontier.markLive();
      const bloom = await createBloomFilter(redis, bloomOptions, settings.seenBackend);
      // The filter's allocation (tens of MB, Redis busy meanwhile) as the crawl's processes start,
      // not in its first discovery batch; a wiped crawl's filter is its rebuild's to restore.
      if (PREPARES_SEEN.has(options.role) && !settings.wiped) await bloom.prepare();
      const seen = new SeenSet(bloom, db);
      const queues = queueModule && new queueModule.FetchQueues(queueRedis, { namespace: config.namespace, partitions: config.partitions, attempts: config.worker.attempts, deadLetterMax: config.worker.dlqMax });
      // A good copy stays for the outage fallback: the fallback period plus the copy's own lifetime.
      const keepLastGoodMs = config.robots.outageFallbackMs > 0 ? config.robots.outageFallbackMs + config.robots.ttlMs : 0;
      const robots = new RobotsCache(redis, { prefix: config.namespace, clock, keepLastGoodMs });
      const counters = new Counters(redis, config.namespace);
      const policyStore = new PolicyStore(redis, config.namespace);
      const policy = new PolicyFollower(policyStore, 2000, () => clock.now());
      logger.info({ namespace: config.namespace, role: options.role, partitions: config.partitions, bloom: bloom.backend }, 'runtime ready');
      return new Runtime(config, logger, clock, redis, queueRedis, db, frontier, seen, queues, robots, counters, policyStore, policy, settings, options.redisUrl, options.databaseUrl, options.role, http);
    } catch (error) {
      redis.disconnect();
      queueRedis.disconnect();
      await db.close().catch(() => undefined);
      throw error;
    }
  }

  /**
   * A connection for blocking consumers (BullMQ workers), opened on first use. Without
   * auto-pipelining, for the reason `queueRedis` has none: a worker's commands are one at a time
   * per job, and each would build a pipeline carrying BullMQ's scripts.
   */
  blockingRedis(): Redis {
    this.blocking ??= createRedis(this.redisUrl, {
      name: `trawl:${this.config.namespace}:${this.role}:${process.pid}:blocking`,
      blocking: true,
      autoPipelining: false,
      cluster: this.config.redisCluster,
    });
    return this.blocking;
  }

  /**
   * The process stage's connection for reading its streams (a blocking read waits on it while
   * nothing is handed off, so it is nobody else's), opened on first use.
   */
  processRedis(): Redis {
    this.processConnection ??= createRedis(this.redisUrl, {
      name: `trawl:${this.config.namespace}:${this.role}:${process.pid}:process`,
      blocking: true,
      autoPipelining: false,
      cluster: this.config.redisCluster,
    });
    return this.processConnection;
  }

  /** The HTTP client (fetch workers only), built on first use. */
  get fetcher(): Fetcher {
    this.fetcherInstance ??= this.httpClient('HTTP client').createFetcher(this.config, this.clock, this.signingKey, (event) => {
      for (const listener of this.proxyListeners) listener(event);
    });
    return this.fetcherInstance;
  }

  /**
   * The address gate (fetch workers only): the politeness groups that span partitions (server
   * addresses, registrable domains), in keys of their own. A slot is held at most as long as a
   * host's fetch token.
   */
  get addressGate(): AddressGate {
    this.addressGateInstance ??= new AddressGate(this.redis, { prefix: this.config.namespace, clock: this.clock, holdMs: frontierOptions(this.config, this.config.namespace, this.clock).fetchHoldMs });
    return this.addressGateInstance;
  }

  /** Listens to the requests the fetcher routes through proxies (for metrics); returns the unsubscribe. */
  observeProxyRequests(listener: (event: ProxyRequestEvent) => void): () => void {
    this.proxyListeners.add(listener);
    return () => this.proxyListeners.delete(listener);
  }

  /** Says a host was judged blocked (the fetch stage's block detector) to whoever listens (metrics). */
  tellBlocked(event: BlockedHostEvent): void {
    for (const listener of this.blockedListeners) listener(event);
  }

  /** Listens to hosts judged blocked; returns the unsubscribe. */
  observeBlockedHosts(listener: (event: BlockedHostEvent) => void): () => void {
    this.blockedListeners.add(listener);
    return () => this.blockedListeners.delete(listener);
  }

  /** The Web Bot Auth key requests are signed with (TRAWL_SIGNATURE_KEY_FILE), read on first use; null: not signing. */
  get signingKey(): SigningKey | null {
    if (this.signingKeyInstance === undefined) {
      const file = this.config.fetch.signatureKeyFile;
      this.signingKeyInstance = file === undefined ? null : this.httpClient('signing key').readSigningKey(file);
    }
    return this.signingKeyInstance;
  }

  /** The content store (fetch workers only), built on first use. */
  /** Seed admission against the frontier's queued count (TRAWL_FRONTIER_MAX_QUEUED), shared by the crawl's processes. */
  get admission(): Admission {
    this.admissionInstance ??= new Admission(this.redis, this.frontier, { prefix: this.config.namespace, maxQueued: frontierMaxQueued(this.config), clock: this.clock });
    return this.admissionInstance;
  }

  get store(): ContentStore {
    this.storeInstance ??= createContentStore(this.config);
    return this.storeInstance;
  }

  /**
   * The seen-set's snapshots, kept in the content store's `seen-snapshots` folder (built on first
   * use). `s3Client` adds S3 client settings (tests: s3rver's credentials).
   */
  seenSnapshots(s3Client?: Parameters<typeof createNamedObjects>[2]): SeenSnapshots {
    this.snapshotObjects ??= createNamedObjects(this.config, 'seen-snapshots', s3Client);
    const { namespace, seen } = this.config;
    return new SeenSnapshots(this.redis, { prefix: namespace, capacity: seen.capacity, errorRate: seen.errorRate, shards: seen.shards }, this.seen.bloom.backend, this.snapshotObjects);
  }

  /** A discovery batcher over this runtime's seen-set, database and frontier. */
  discovery(): Discovery {
    return createDiscovery({
      seen: this.seen,
      db: this.db,
      frontier: this.frontier,
      counters: this.counters,
      robots: this.robots,
      policy: this.policy,
      clock: this.clock,
      logger: this.logger.child({ component: 'discovery' }),
      defaults: { maxUrlsPerHost: this.config.policy.maxUrlsPerHost, maxQueryVariants: this.config.policy.maxQueryVariants, maxDateVariants: this.config.policy.maxDateVariants },
    });
  }

  /**
   * Whether the crawl's Redis data is there: its settings are recorded (or the namespace is new and
   * gets its settings now). Not intact: Redis lost the crawl while PostgreSQL holds its URLs, and
   * nothing may be dispatched until `trawl frontier rebuild` restores it — the message says so.
   * One HEXISTS per call (a PostgreSQL query only while the key is missing).
   */
  async intact(): Promise<{ ok: true } | { ok: false; message: string }> {
    if (await settingsRecorded(this.redis, this.config.namespace)) return { ok: true };
    if (!(await this.db.hasUrls())) {
      await this.settings.record();
      await this.frontier.markLive();
      return { ok: true };
    }
    return { ok: false, message: wipedMessage(this.config.namespace) };
  }

  /** Removes everything the namespace holds (Redis keys and the PostgreSQL schema), then recreates the schema. */
  async wipe(): Promise<void> {
    // The schema first: one trawl did not make is refused before anything is deleted.
    await this.db.dropSchema();
    await deleteByPrefix(this.redis, `${this.config.namespace}:`);
    await this.db.migrate();
    await this.settings.record();
    await this.frontier.markLive();
    await this.seen.bloom.prepare();
  }

  async close(): Promise<void> {
    await this.counters.flush().catch(() => undefined);
    await this.fetchQueues?.close().catch(() => undefined);
    this.fetcherInstance?.close();
    await this.storeInstance?.close().catch(() => undefined);
    this.snapshotObjects?.close();
    await this.db.close().catch(() => undefined);
    this.blocking?.disconnect();
    this.processConnection?.disconnect();
    this.queueRedis.disconnect();
    this.redis.disconnect();
  }
}

/**
 * This machine's clock, corrected to the Redis server's when the two disagree by more than
 * measurement noise. Due times are compared across every worker, so a worker whose clock runs
 * ahead would fetch early; a small, noisy correction would be worse than none, so only large
 * offsets (a machine without NTP) are corrected, and they are reported.
 */
async function redisClock(redis: Redis, logger: Logger): Promise<Clock> {
  let best = { rtt: Infinity, offset: 0 };
  for (let i = 0; i < 3; i += 1) {
    const before = Date.now();
    const server = await redisTimeMs(redis);
    const after = Date.now();
    if (after - before < best.rtt) best = { rtt: after - before, offset: server - (before + after) / 2 };
  }
  if (Math.abs(best.offset) < 250) return new OffsetClock(0);
  logger.warn({ offsetMs: Math.round(best.offset) }, 'this machine\'s clock differs from the Redis server\'s; correcting (run NTP)');
  return new OffsetClock(Math.round(best.offset));
}
