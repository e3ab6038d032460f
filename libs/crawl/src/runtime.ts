import { type Config, ConfigError } from '@trawl/config';
import { type Clock, OffsetClock } from '@trawl/core';
import { Database } from '@trawl/db';
import { readFileSync } from 'node:fs';
import { DnsCache, Fetcher, parseHostsFile } from '@trawl/fetch';
import { Frontier } from '@trawl/frontier';
import { FetchQueues } from '@trawl/queue';
import { createRedis, type Redis, redisTimeMs } from '@trawl/redis';
import { RobotsCache } from '@trawl/robots';
import { createBloomFilter, SeenSet } from '@trawl/seen';
import { LocalContentStore } from '@trawl/store';
import type { Logger } from '@trawl/telemetry';
import { Counters } from './counters.js';
import { PolicyFollower, PolicyStore } from './policy.js';

export interface RuntimeOptions {
  config: Readonly<Config>;
  /** Resolved by the app (explicit, local default, or embedded). */
  redisUrl: string;
  databaseUrl: string;
  logger: Logger;
  /** Process role for connection names ("crawl", "worker"). */
  role: string;
  /** Override the clock (tests). Default: this machine's clock corrected to Redis server time. */
  clock?: Clock;
}

/**
 * Every adapter one trawl process needs, built once from the config. Apps open a runtime, run
 * loops on it, and close it on SIGTERM.
 */
export class Runtime {
  private blocking: Redis | undefined;

  private constructor(
    readonly config: Readonly<Config>,
    readonly logger: Logger,
    readonly clock: Clock,
    readonly redis: Redis,
    readonly db: Database,
    readonly frontier: Frontier,
    readonly seen: SeenSet,
    readonly queues: FetchQueues,
    readonly store: LocalContentStore,
    readonly fetcher: Fetcher,
    readonly robots: RobotsCache,
    readonly counters: Counters,
    readonly policyStore: PolicyStore,
    readonly policy: PolicyFollower,
    private readonly redisUrl: string,
    private readonly role: string,
  ) {}

  static async open(options: RuntimeOptions): Promise<Runtime> {
    const { config, logger } = options;
    const name = `trawl:${config.namespace}:${options.role}:${process.pid}`;
    const redis = createRedis(options.redisUrl, { name, cluster: config.redisCluster });
    redis.on('error', (error) => logger.error({ err: error }, 'redis connection error'));
    const clock = options.clock ?? (await redisClock(redis, logger));
    const db = new Database({ url: options.databaseUrl, schema: config.namespace, applicationName: name });
    try {
      await db.migrate();
    } catch (error) {
      redis.disconnect();
      await db.close();
      throw error;
    }
    const frontier = new Frontier(redis, {
      prefix: config.namespace,
      partitions: config.partitions,
      bands: config.dispatch.bands,
      leaseMs: config.worker.leaseMs,
      fetchHoldMs: config.fetch.deadlineMs + 5000,
      busyRetryMs: 250,
      maxUrlsPerHost: config.policy.maxUrlsPerHost,
      clock,
    });
    const bloom = await createBloomFilter(
      redis,
      { prefix: config.namespace, capacity: config.seen.capacity, errorRate: config.seen.errorRate, shards: config.seen.shards },
      config.seen.backend,
    );
    const seen = new SeenSet(bloom, db);
    const queues = new FetchQueues(redis, { namespace: config.namespace, partitions: config.partitions, attempts: config.worker.attempts });
    const store = new LocalContentStore({ dir: config.worker.contentDir, fsync: config.worker.contentFsync });
    const fetcher = new Fetcher({
      userAgent: config.worker.userAgent,
      timeouts: {
        connectMs: config.fetch.connectTimeoutMs,
        firstByteMs: config.fetch.firstByteTimeoutMs,
        idleMs: config.fetch.idleTimeoutMs,
        totalMs: config.fetch.deadlineMs,
      },
      maxBodyBytes: config.fetch.maxBodyBytes,
      clock,
      ssrf: { allowNetworks: config.fetch.allowNetworks },
      dns: new DnsCache({
        maxTtlS: config.fetch.dnsMaxTtlS,
        errorTtlMs: config.fetch.dnsErrorTtlMs,
        clock,
        hosts: config.fetch.hostsFile ? readHostsFile(config.fetch.hostsFile) : undefined,
      }),
    });
    const robots = new RobotsCache(redis, { prefix: config.namespace, clock });
    const counters = new Counters(redis, config.namespace);
    const policyStore = new PolicyStore(redis, config.namespace);
    const policy = new PolicyFollower(policyStore, 2000, () => clock.now());
    logger.info({ namespace: config.namespace, partitions: config.partitions, bloom: bloom.backend }, 'runtime ready');
    return new Runtime(config, logger, clock, redis, db, frontier, seen, queues, store, fetcher, robots, counters, policyStore, policy, options.redisUrl, options.role);
  }

  /** A connection for blocking consumers (BullMQ workers), opened on first use. */
  blockingRedis(): Redis {
    this.blocking ??= createRedis(this.redisUrl, { name: `trawl:${this.config.namespace}:${this.role}:${process.pid}:blocking`, blocking: true, cluster: this.config.redisCluster });
    return this.blocking;
  }

  async close(): Promise<void> {
    await this.counters.flush().catch(() => undefined);
    await this.queues.close().catch(() => undefined);
    this.fetcher.close();
    await this.store.close().catch(() => undefined);
    await this.db.close().catch(() => undefined);
    this.blocking?.disconnect();
    this.redis.disconnect();
  }
}

function readHostsFile(path: string): Map<string, string[]> {
  try {
    return parseHostsFile(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError([`TRAWL_HOSTS_FILE (fetch.hostsFile): ${(error as Error).message}`]);
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
