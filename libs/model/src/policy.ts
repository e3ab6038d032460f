import type { Config } from '@trawl/config';
import { bindScripts, loadScripts, type Redis, type ScriptCaller } from '@trawl/redis';
import { DEFAULT_POLITENESS, type PolitenessOptions } from '@trawl/politeness';
import { DEFAULT_RECRAWL, type RecrawlOptions, recrawlOptions } from '@trawl/recrawl';
import type { RobotsOptions } from '@trawl/robots';
import {
  DEFAULT_SKIP_EXTENSIONS,
  DEFAULT_STRIP_PARAMS,
  DEFAULT_TRAP_OPTIONS,
  extensionSet,
  type NormalizeOptions,
  type Scope,
  scopeFromSeeds,
  type TrapOptions,
} from '@trawl/url';
import { z } from 'zod';

/** The re-crawl settings a policy stored before they existed gets. */
const DEFAULT_RECRAWL_SETTINGS = {
  minIntervalS: DEFAULT_RECRAWL.minIntervalS,
  maxIntervalS: DEFAULT_RECRAWL.maxIntervalS,
  initialIntervalS: DEFAULT_RECRAWL.initialIntervalS,
  revisitFraction: DEFAULT_RECRAWL.revisitFraction,
  decay: DEFAULT_RECRAWL.decay,
  failureBaseS: DEFAULT_RECRAWL.failureBaseS,
  failureMaxS: DEFAULT_RECRAWL.failureMaxS,
  goneIntervalS: DEFAULT_RECRAWL.goneIntervalS,
};

/**
 * What a policy stored before duplicate detection existed gets: the settings' defaults, which
 * keep every body and follow every link (what that release did).
 */
export const DEFAULT_DEDUP_POLICY = { nearDupDistance: 3, nearDupStoreBody: true, nearDupFollowLinks: true } as const;

/** What a policy stored before link-context priority existed gets: every link 0.5 (what that release gave). */
export const FLAT_LINK_PRIORITY = { depth: 0, sitemap: 0.5, fresh: 0 } as const;

/**
 * The rules every process of one crawl must share: scope, limits, politeness delay and URL
 * normalization (two workers normalizing differently would fingerprint one page twice).
 * `trawl crawl` publishes it in Redis; workers read it at start and follow changes. Fields added
 * since the first version have defaults, so a policy stored by an earlier release still loads and
 * keeps the behaviour it was published with (the configured delay as a floor, no skipped
 * extensions).
 */
export const crawlPolicySchema = z.object({
  version: z.number().int().min(1),
  scope: z.object({
    mode: z.enum(['host', 'domain', 'any']),
    hosts: z.array(z.string()),
    domains: z.array(z.string()),
    /** In scope whatever the mode: from seeds added with a narrower or wider scope of their own. */
    extraHosts: z.array(z.string()).default([]),
    extraDomains: z.array(z.string()).default([]),
  }),
  maxDepth: z.number().int().min(0).nullable(),
  maxPages: z.number().int().min(1).nullable(),
  /** Frontier "done" count when maxPages was set: the limit counts pages from there. */
  pagesBaseline: z.number().int().min(0).default(0),
  minDelayMs: z.number().int().min(0),
  maxUrlLength: z.number().int().min(16),
  maxUrlsPerHost: z.number().int().min(0),
  maxLinksPerPage: z.number().int().min(1),
  maxRedirects: z.number().int().min(0),
  maxQueryVariants: z.number().int().min(0),
  // Absent from a policy published before the setting existed: the setting's default.
  maxDateVariants: z.number().int().min(0).default(50),
  trapChecks: z.boolean(),
  nonHtml: z.enum(['skip', 'store']),
  /** Links whose file name ends in one of these (lowercase, no dot) are recorded as skipped, never fetched. */
  skipExtensions: z.array(z.string().min(1)).default([]),
  stripParams: z.array(z.string()),
  sortQuery: z.boolean(),
  politeness: z.object({
    crawlDelayFloorMs: z.number().int().min(0).default(DEFAULT_POLITENESS.crawlDelayFloorMs),
    forceDelay: z.boolean().default(true),
    maxDelayMs: z.number().int().min(0),
    adaptiveFactor: z.number().min(0),
    adaptiveResponseCapMs: z.number().int().min(0).default(DEFAULT_POLITENESS.adaptiveResponseCapMs),
    adaptiveSamples: z.number().int().min(1).default(DEFAULT_POLITENESS.adaptiveSamples),
    backoffBaseMs: z.number().int().min(0),
    backoffMaxMs: z.number().int().min(0),
    hostFailureThreshold: z.number().int().min(1).default(DEFAULT_POLITENESS.hostFailureThreshold),
    maxRetryAfterMs: z.number().int().min(0),
    // Absent from a policy published before these settings existed: their defaults.
    key: z.enum(['host', 'ip', 'domain']).default('host'),
    ipMaxInFlight: z.number().int().min(1).default(6),
    ipMinIntervalMs: z.number().int().min(0).default(100),
  }),
  /** When pages are visited again (see @trawl/recrawl). Absent in policies stored by older releases. */
  recrawl: z
    .object({
      enabled: z.boolean(),
      minIntervalS: z.number().int().min(1),
      maxIntervalS: z.number().int().min(1),
      initialIntervalS: z.number().int().min(1),
      revisitFraction: z.number().min(0.01).max(1),
      decay: z.number().min(0.5).max(1),
      failureBaseS: z.number().int().min(1),
      failureMaxS: z.number().int().min(1),
      goneIntervalS: z.number().int().min(1),
    })
    .default(() => ({ enabled: true, ...DEFAULT_RECRAWL_SETTINGS })),
  /**
   * Duplicate detection (TRAWL_NEAR_DUP_*): crawl-wide, so every worker calls the same pages
   * near-duplicates and treats them alike. Absent in policies stored by older releases.
   */
  dedup: z
    .object({
      nearDupDistance: z.number().int().min(0).max(3),
      nearDupStoreBody: z.boolean(),
      nearDupFollowLinks: z.boolean(),
    })
    .default(() => ({ ...DEFAULT_DEDUP_POLICY })),
  /**
   * A discovered link's priority within its host, from where it was found (TRAWL_PRIORITY_WEIGHTS'
   * `depth`, `sitemap`, `fresh`; see `linkPriority`). Absent in policies stored by older releases:
   * every link 0.5, as they gave.
   */
  linkPriority: z
    .object({ depth: z.number().min(0).max(1), sitemap: z.number().min(0).max(1), fresh: z.number().min(0).max(1) })
    .default(() => ({ ...FLAT_LINK_PRIORITY })),
  robots: z.object({
    obey: z.boolean(),
    productToken: z.string().min(1),
    ttlMs: z.number().int().min(1),
    retryBaseMs: z.number().int().min(1),
    outageFallbackMs: z.number().int().min(0),
    maxCrawlDelayMs: z.number().int().min(0),
    overCap: z.enum(['clamp', 'skip']),
    serverError: z.enum(['disallow', 'allow']).default('disallow'),
  }),
});
export type CrawlPolicy = z.output<typeof crawlPolicySchema>;

/** The policy a crawl started with `config` and these seeds follows. */
export function policyFromConfig(config: Config, seeds: readonly string[]): CrawlPolicy {
  const scope = scopeFromSeeds(config.policy.scope, seeds);
  return {
    version: 1,
    scope: { mode: scope.mode, hosts: [...scope.hosts], domains: [...scope.domains], extraHosts: [], extraDomains: [] },
    maxDepth: config.policy.maxDepth ?? null,
    maxPages: config.policy.maxPages ?? null,
    pagesBaseline: 0,
    minDelayMs: config.policy.minDelayMs,
    maxUrlLength: config.policy.maxUrlLength,
    maxUrlsPerHost: config.policy.maxUrlsPerHost,
    maxLinksPerPage: config.policy.maxLinksPerPage,
    maxRedirects: config.policy.maxRedirects,
    maxQueryVariants: config.policy.maxQueryVariants,
    maxDateVariants: config.policy.maxDateVariants,
    trapChecks: config.policy.trapChecks,
    nonHtml: config.policy.nonHtml,
    skipExtensions: skipExtensionsOf(config.policy),
    stripParams: [...(config.policy.stripParams ?? DEFAULT_STRIP_PARAMS)],
    sortQuery: config.policy.sortQuery,
    politeness: { ...config.politeness },
    recrawl: {
      enabled: config.recrawl.enabled,
      minIntervalS: config.recrawl.minIntervalS,
      maxIntervalS: Math.max(config.recrawl.minIntervalS, config.recrawl.maxIntervalS),
      initialIntervalS: config.recrawl.initialIntervalS,
      revisitFraction: config.recrawl.revisitFraction,
      decay: config.recrawl.decay,
      failureBaseS: config.recrawl.failureBaseS,
      failureMaxS: config.recrawl.failureMaxS,
      goneIntervalS: config.recrawl.goneIntervalS,
    },
    dedup: { nearDupDistance: config.dedup.nearDupDistance, nearDupStoreBody: config.dedup.nearDupStoreBody, nearDupFollowLinks: config.dedup.nearDupFollowLinks },
    linkPriority: { depth: config.dispatch.priorityWeights.depth, sitemap: config.dispatch.priorityWeights.sitemap, fresh: config.dispatch.priorityWeights.fresh },
    robots: { ...config.robots },
  };
}

/**
 * The extensions links are skipped by: the configured list, else the built-in one when non-HTML
 * bodies are skipped anyway (fetching such a link would only drop it at its headers), else none.
 */
function skipExtensionsOf(policy: Pick<Config['policy'], 'skipExtensions' | 'nonHtml'>): string[] {
  return [...extensionSet(policy.skipExtensions ?? (policy.nonHtml === 'skip' ? DEFAULT_SKIP_EXTENSIONS : []))];
}

/**
 * Widens a policy's scope with more seeds (seeds added to a running crawl), in the crawl's own
 * mode or in `mode` when the seeds ask for one: a `host` seed in a `domain` crawl brings only its
 * host, a `domain` seed in a `host` crawl its whole registrable domain, an `any` seed opens the
 * crawl to every host.
 */
export function withSeeds(policy: CrawlPolicy, seeds: readonly string[], mode: 'host' | 'domain' | 'any' = policy.scope.mode): CrawlPolicy {
  if (mode === 'any') return { ...policy, scope: { ...policy.scope, mode: 'any' } };
  const scope = scopeFromSeeds(mode, seeds);
  const union = (a: readonly string[], b: Iterable<string>) => [...new Set([...a, ...b])];
  if (mode === policy.scope.mode || policy.scope.mode === 'any') {
    return { ...policy, scope: { ...policy.scope, hosts: union(policy.scope.hosts, scope.hosts), domains: union(policy.scope.domains, scope.domains) } };
  }
  return mode === 'host'
    ? { ...policy, scope: { ...policy.scope, extraHosts: union(policy.scope.extraHosts, scope.hosts) } }
    : { ...policy, scope: { ...policy.scope, extraDomains: union(policy.scope.extraDomains, scope.domains) } };
}

/**
 * A process's own settings (`fresh`) published over the stored policy: the scope earlier seeds
 * widened is kept while the scope's mode is the same, and a max-pages limit counts from
 * `pagesBaseline` (the frontier's done count now).
 */
export function withSettings(stored: CrawlPolicy | null, fresh: CrawlPolicy, pagesBaseline: number): CrawlPolicy {
  return { ...fresh, pagesBaseline, scope: stored && stored.scope.mode === fresh.scope.mode ? stored.scope : fresh.scope };
}

/** The policy in the forms the pipeline uses. */
export interface ResolvedPolicy {
  policy: CrawlPolicy;
  scope: Scope;
  normalize: NormalizeOptions;
  politeness: PolitenessOptions;
  robots: RobotsOptions;
  traps: TrapOptions | null;
  /** Lowercase, without dots; empty: no link is skipped for its extension. */
  skipExtensions: ReadonlySet<string>;
  /** The re-crawl schedule's options (validated). */
  recrawl: RecrawlOptions;
  /** Duplicate detection: the SimHash distance, and what is done with duplicates (`duplicateHandling`). */
  dedup: CrawlPolicy['dedup'];
}

export function resolvePolicy(policy: CrawlPolicy): ResolvedPolicy {
  return {
    policy,
    scope: {
      mode: policy.scope.mode,
      hosts: new Set(policy.scope.hosts),
      domains: new Set(policy.scope.domains),
      extraHosts: new Set(policy.scope.extraHosts),
      extraDomains: new Set(policy.scope.extraDomains),
    },
    normalize: { stripParams: policy.stripParams, sortQuery: policy.sortQuery, maxUrlLength: policy.maxUrlLength },
    politeness: { minDelayMs: policy.minDelayMs, maxCrawlDelayMs: policy.robots.maxCrawlDelayMs, ...policy.politeness },
    robots: {
      productToken: policy.robots.productToken,
      ttlMs: policy.robots.ttlMs,
      retryBaseMs: policy.robots.retryBaseMs,
      outageFallbackMs: policy.robots.outageFallbackMs,
      maxCrawlDelayMs: policy.robots.maxCrawlDelayMs,
      overCap: policy.robots.overCap,
      serverError: policy.robots.serverError,
    },
    traps: policy.trapChecks ? DEFAULT_TRAP_OPTIONS : null,
    skipExtensions: extensionSet(policy.skipExtensions),
    recrawl: recrawlOptions({ ...DEFAULT_RECRAWL, ...policy.recrawl }),
    dedup: policy.dedup,
  };
}


const SCRIPTS = loadScripts(import.meta.url, '../lua', ['publishPolicy-1']);

/** Where the policy lives in Redis. */
export class PolicyStore {
  private readonly key: string;
  private readonly scripts: Record<'publishPolicy', ScriptCaller>;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.key = `${namespace}:policy`;
    this.scripts = bindScripts(redis, SCRIPTS);
  }

  /** Called after this process publishes (its followers reload at once). */
  onPublish(listener: () => void): void {
    this.listeners.add(listener);
  }

  async load(): Promise<CrawlPolicy | null> {
    const raw = await this.redis.get(this.key);
    if (raw === null) return null;
    const parsed = crawlPolicySchema.safeParse(JSON.parse(raw));
    if (!parsed.success) throw new Error(`the crawl policy stored at ${this.key} is invalid: ${parsed.error.message}`);
    return parsed.data;
  }

  /** Stores the policy under the next version number; returns what was stored. */
  async publish(policy: CrawlPolicy): Promise<CrawlPolicy> {
    return this.update(() => policy);
  }

  /**
   * Read-modify-write of the policy, safe against other processes doing the same at once: the
   * change is computed from the stored policy and stored only if nobody published in between
   * (otherwise it is computed again from the newer one).
   */
  async update(change: (current: CrawlPolicy | null) => CrawlPolicy): Promise<CrawlPolicy> {
    for (let attempt = 0; ; attempt += 1) {
      const previous = await this.load();
      const version = previous?.version ?? 0;
      const next = crawlPolicySchema.parse({ ...change(previous), version: version + 1 });
      if (Number(await this.scripts.publishPolicy([this.key], [version, JSON.stringify(next)])) === 1) {
        for (const listener of this.listeners) listener();
        return next;
      }
      if (attempt >= 50) throw new Error(`could not publish the crawl policy at ${this.key}: it kept changing`);
    }
  }
}

/** Follows the published policy: reloads it at most every `refreshMs`. */
export class PolicyFollower {
  private current: ResolvedPolicy | null = null;
  private loadedAt = 0;
  private loading: Promise<ResolvedPolicy | null> | null = null;

  constructor(
    private readonly store: PolicyStore,
    private readonly refreshMs = 5000,
    private readonly now: () => number = Date.now,
  ) {
    store.onPublish(() => {
      this.loadedAt = 0;
    });
  }

  /** The current policy, or null when no crawl has published one yet. */
  async get(): Promise<ResolvedPolicy | null> {
    if (this.current && this.now() - this.loadedAt < this.refreshMs) return this.current;
    return this.reload();
  }

  /**
   * Reads the policy again now. For a process that knows its copy is behind: it published one
   * itself, or it holds a URL its copy says is out of scope (seeds widened the scope since).
   */
  async refresh(): Promise<ResolvedPolicy | null> {
    this.loadedAt = 0;
    await this.loading;
    return this.reload();
  }

  private reload(): Promise<ResolvedPolicy | null> {
    this.loading ??= this.store
      .load()
      .then((policy) => {
        this.loadedAt = this.now();
        if (policy && policy.version !== this.current?.policy.version) this.current = resolvePolicy(policy);
        if (!policy) this.current = null;
        return this.current;
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }
}
