import { type LookupAddress, type LookupOptions, promises as dnsPromises } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { type Clock, ErrorCode, systemClock, TrawlError } from '@trawl/core';
import CacheableLookup, { type CacheInstance, type EntryObject, type Options as CacheableLookupOptions } from 'cacheable-lookup';
import { dnsMeansNoSuchHost } from './errors.js';

/** One A or AAAA record with its TTL in seconds, as `dns.promises.Resolver#resolve4(h, { ttl: true })` gives it. */
export interface DnsRecord {
  address: string;
  ttl: number;
}

/** The part of `dns.promises.Resolver` the cache uses; a test double implements just this. */
export interface DnsResolver {
  resolve4(hostname: string, options: { ttl: true }): Promise<DnsRecord[]>;
  resolve6(hostname: string, options: { ttl: true }): Promise<DnsRecord[]>;
}

export interface DnsCacheOptions {
  /** Upper bound on a record's TTL, seconds. Default 3600. 0 disables positive caching. */
  maxTtlS?: number;
  /** How long "no such host" (NXDOMAIN, no A/AAAA records) is remembered. Default 3,600,000. */
  errorTtlMs?: number;
  /**
   * How long a transient failure (SERVFAIL, resolver timeout, EAI_AGAIN, refused) is remembered.
   * Default 2,000: long enough to spare the resolver a burst of fetches to one broken host,
   * shorter than the queue's first retry delay so a retry asks again. Set it to `errorTtlMs` to
   * treat every failure alike.
   */
  transientErrorTtlMs?: number;
  /** Hostnames kept in each of the positive and negative caches (oldest dropped). Default 100,000. */
  maxEntries?: number;
  /** Expires entries. Default: the system clock. */
  clock?: Clock;
  /**
   * Answers A and AAAA queries with TTLs. Default: a `dns.promises.Resolver` (the system's
   * nameservers), falling back to the OS's `dns.lookup` (hosts file, mDNS) for names it cannot
   * resolve, uncached, as cacheable-lookup does. An injected resolver gets no such fallback.
   */
  resolver?: DnsResolver;
  /**
   * Static entries answered before any resolver, like /etc/hosts (or curl's --resolve): pin a
   * site to a staging address, or name the synthetic web's hosts. Keys are lowercase names.
   * The SSRF guard still judges the addresses.
   */
  hosts?: ReadonlyMap<string, readonly string[]>;
}

/** Parses hosts(5) text: "address name [aliases…]" per line, # comments. Throws on a bad address. */
export function parseHostsFile(text: string): Map<string, string[]> {
  const hosts = new Map<string, string[]>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    const [address, ...names] = line.split(/\s+/);
    if (address === undefined || isIP(address) === 0 || names.length === 0) {
      throw new TrawlError(ErrorCode.ConfigInvalid, `hosts file line ${i + 1}: expected "address name…", got ${JSON.stringify(raw)}`, { action: 'fatal' });
    }
    for (const name of names) {
      const key = name.toLowerCase();
      hosts.set(key, [...(hosts.get(key) ?? []), address]);
    }
  });
  return hosts;
}

export interface DnsCacheStats {
  /** Lookups answered from the cache, positive or negative, without a query. */
  hits: number;
  /** Lookups that queried the resolver. */
  misses: number;
  /** Failures stored in the negative cache (each hostname counted once per expiry). */
  failuresCached: number;
}

interface CachedFailure {
  code: string;
  message: string;
  syscall: string | undefined;
  expiresAt: number;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS cache for the whole process (every fetch, robots.txt included), built on
 * cacheable-lookup 7, which queries A and AAAA with their TTLs (capped at `maxTtlS`).
 *
 * What cacheable-lookup caches itself: only answers. Resolver errors it does not swallow
 * (SERVFAIL, timeouts, refused) are thrown and never cached; NXDOMAIN / NODATA become an empty
 * answer, cached for `errorTtl` seconds (default 0.15, and, despite its README, capped by
 * `maxTtl`) and reported as a generic `ENOTFOUND`. Its expiry runs on `Date.now()` and a
 * timer. So here its `errorTtl` is 0, its store is a clock-driven map (TTLs follow the
 * injected clock), and every failure goes to one negative cache of our own, with the
 * resolver's code, for `errorTtlMs` (no such host) or `transientErrorTtlMs` (the rest).
 */
export class DnsCache {
  readonly lookup: LookupFunction;
  private readonly cacheable: CacheableLookup;
  private readonly store: ClockedStore;
  private readonly failures = new Map<string, CachedFailure>();
  private readonly clock: Clock;
  private readonly errorTtlMs: number;
  private readonly transientErrorTtlMs: number;
  private readonly maxEntries: number;
  private readonly hosts: ReadonlyMap<string, readonly string[]>;
  private failureHits = 0;
  private failuresStored = 0;

  constructor(options: DnsCacheOptions = {}) {
    const maxTtlS = options.maxTtlS ?? 3600;
    this.errorTtlMs = options.errorTtlMs ?? 3_600_000;
    this.transientErrorTtlMs = options.transientErrorTtlMs ?? 2_000;
    this.maxEntries = options.maxEntries ?? 100_000;
    this.clock = options.clock ?? systemClock;
    this.hosts = options.hosts ?? new Map();
    const problems = [
      !(maxTtlS >= 0) && `maxTtlS must be >= 0, got ${maxTtlS}`,
      !(this.errorTtlMs >= 0) && `errorTtlMs must be >= 0, got ${this.errorTtlMs}`,
      !(this.transientErrorTtlMs >= 0) && `transientErrorTtlMs must be >= 0, got ${this.transientErrorTtlMs}`,
      !(this.maxEntries >= 1) && `maxEntries must be >= 1, got ${this.maxEntries}`,
    ].filter((problem): problem is string => typeof problem === 'string');
    if (problems.length > 0) {
      throw new TrawlError(ErrorCode.ConfigInvalid, `DnsCache: ${problems.join('; ')}`, { action: 'fatal' });
    }

    this.store = new ClockedStore(this.clock, this.maxEntries);
    const injected = options.resolver;
    this.cacheable = new CacheableLookup({
      cache: this.store,
      maxTtl: maxTtlS,
      errorTtl: 0, // failures are ours (see above)
      resolver: injected === undefined ? new dnsPromises.Resolver() : callbackResolver(injected),
      ...(injected === undefined ? {} : { lookup: false as const, fallbackDuration: 0 }),
    });

    const lookup = (hostname: string, options: LookupOptions | number | LookupCallback, callback?: LookupCallback): void => {
      const [wanted, done] = typeof options === 'function' ? [{}, options] : [normalizeOptions(options), callback];
      if (done === undefined) throw new TypeError('lookup: callback must be a function');
      this.lookupAll(hostname).then(
        (entries) => {
          const family = wanted.family === 4 || wanted.family === 'IPv4' ? 4 : wanted.family === 6 || wanted.family === 'IPv6' ? 6 : 0;
          const chosen = family === 0 ? entries : entries.filter((entry) => entry.family === family);
          const first = chosen[0];
          if (first === undefined) {
            // A family the host lacks: not a fact about the host, so not cached.
            done(Object.assign(new Error(`no IPv${family} address for ${hostname}`), { code: 'ENOTFOUND', hostname, syscall: 'lookup' }), '');
          } else if (wanted.all === true) {
            done(null, chosen);
          } else {
            done(null, first.address, first.family);
          }
        },
        (error: NodeJS.ErrnoException) => done(error, ''),
      );
    };
    this.lookup = lookup as LookupFunction;
  }

  stats(): DnsCacheStats {
    // cacheable-lookup counts these in `stats` (source/index.js); its typings omit the field.
    const { cache, query } = (this.cacheable as unknown as { stats: { cache: number; query: number } }).stats;
    return {
      hits: cache + this.failureHits,
      misses: query,
      failuresCached: this.failuresStored,
    };
  }

  /** Forgets everything (both caches). */
  clear(): void {
    this.cacheable.clear();
    this.failures.clear();
  }

  /**
   * Every address of `hostname`, A records first. Node's ADDRCONFIG hint is not applied: with
   * happy eyeballs (node's default autoSelectFamily) a family without a route costs one short
   * attempt, and on a machine whose only interfaces are internal it would filter out everything.
   */
  private async lookupAll(hostname: string): Promise<LookupAddress[]> {
    const key = hostname.toLowerCase();
    const pinned = this.hosts.get(key);
    if (pinned !== undefined) return pinned.map((address) => ({ address, family: isIP(address) }));
    const failure = this.failures.get(key);
    if (failure !== undefined) {
      if (this.clock.now() < failure.expiresAt) {
        this.failureHits++;
        throw failureError(key, failure, true);
      }
      this.failures.delete(key);
    }
    try {
      const entries = await this.cacheable.lookupAsync(key, { all: true });
      return entries.map(({ address, family }: EntryObject) => ({ address, family }));
    } catch (error) {
      throw this.remember(key, error);
    }
  }

  /** Stores a failure in the negative cache and returns the error to report. */
  private remember(hostname: string, error: unknown): NodeJS.ErrnoException {
    const { code, syscall, message } = error as { code?: unknown; syscall?: unknown; message?: unknown };
    const failure: CachedFailure = {
      code: typeof code === 'string' ? code : 'EDNSFAIL',
      message: typeof message === 'string' ? message : String(error),
      syscall: typeof syscall === 'string' ? syscall : undefined,
      expiresAt: 0,
    };
    const ttlMs = dnsMeansNoSuchHost(failure.code) ? this.errorTtlMs : this.transientErrorTtlMs;
    failure.expiresAt = this.clock.now() + ttlMs;
    if (ttlMs > 0) {
      if (!this.failures.has(hostname)) this.failuresStored++;
      this.failures.delete(hostname); // re-insert: the map's order is the eviction order
      this.failures.set(hostname, failure);
      while (this.failures.size > this.maxEntries) {
        const oldest = this.failures.keys().next().value;
        if (oldest === undefined) break;
        this.failures.delete(oldest);
      }
    }
    return failureError(hostname, failure, false);
  }
}

/** A fresh error for each caller (node annotates the errors it is given). */
function failureError(hostname: string, failure: CachedFailure, cached: boolean): NodeJS.ErrnoException {
  return Object.assign(new Error(failure.message), {
    code: failure.code,
    hostname,
    syscall: failure.syscall ?? 'lookup',
    cached,
    // For a transient failure: the next attempt is pointless before the negative entry expires.
    ...(dnsMeansNoSuchHost(failure.code) ? {} : { retryAt: failure.expiresAt }),
  });
}

function normalizeOptions(options: LookupOptions | number | undefined): LookupOptions {
  if (typeof options === 'number') return { family: options };
  return options ?? {};
}

/**
 * cacheable-lookup promisifies a resolver's callback-style resolve4/resolve6 unless it is a
 * `dns.promises.Resolver`; this adapts a promise-returning double to that, copying the records
 * (cacheable-lookup writes `family` and `expires` into them).
 */
function callbackResolver(resolver: DnsResolver): NonNullable<CacheableLookupOptions['resolver']> {
  type Callback = (error: Error | null, records?: DnsRecord[]) => void;
  const adapt =
    (query: (hostname: string, options: { ttl: true }) => Promise<DnsRecord[]>) =>
    (hostname: string, options: { ttl: true }, callback: Callback): void => {
      query.call(resolver, hostname, options).then(
        (records) => callback(null, records.map((record) => ({ address: record.address, ttl: record.ttl }))),
        (error: Error) => callback(error),
      );
    };
  return {
    resolve4: adapt(resolver.resolve4),
    resolve6: adapt(resolver.resolve6),
    getServers: () => [],
    setServers: () => undefined,
  } as never;
}

/**
 * cacheable-lookup's store, expiring on the injected clock. Not iterable on purpose: for an
 * iterable store cacheable-lookup also runs its own Date.now()-based sweep timer.
 */
class ClockedStore implements CacheInstance {
  private readonly entries = new Map<string, { value: EntryObject[]; expiresAt: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries: number,
  ) {}

  get(hostname: string): EntryObject[] | undefined {
    const entry = this.entries.get(hostname);
    if (entry === undefined) return undefined;
    if (this.clock.now() >= entry.expiresAt) {
      this.entries.delete(hostname);
      return undefined;
    }
    return entry.value;
  }

  set(hostname: string, value: EntryObject[], ttlMs: number): void {
    this.entries.delete(hostname);
    this.entries.set(hostname, { value, expiresAt: this.clock.now() + ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  delete(hostname: string): boolean {
    return this.entries.delete(hostname);
  }

  clear(): void {
    this.entries.clear();
  }
}
