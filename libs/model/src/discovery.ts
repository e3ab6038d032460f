import { Batcher, type Clock, ErrorCode, PROCESS_BATCH_WAIT_MS, URGENT_BATCH_WAIT_MS } from '@trawl/core';
import type { Database } from '@trawl/db';
import { type Frontier, type HostNote, type PushItem, type RefusalReason, UrlFlag } from '@trawl/frontier';
import type { RobotsCache } from '@trawl/robots';
import type { SeenSet } from '@trawl/seen';
import type { Logger } from '@trawl/telemetry';
import { fingerprint, hostInScope, hostOf, ignoredExtension, ignoredPathExtension, normalizeLink, normalizeUrl, variantKey, trapReason } from '@trawl/url';
import type { Counters } from './counters.js';
import type { CrawlPolicy, PolicyFollower, ResolvedPolicy } from './policy.js';
import { cachedRefusals } from './robots-verdicts.js';

/** A URL on its way into the frontier. */
export interface Candidate extends PushItem {
  hash: Buffer;
  /** Fingerprint of the page it was found on (null for seeds). */
  from: Buffer | null;
  /** Set: the URL is recorded as skipped, with this reason, and never queued (so never fetched). */
  skipReason?: string;
  /** The URL as the site spelled it, when normalization reordered or removed parameters: robots.txt is asked about both. */
  spelled?: string;
  /** The host of the page that links to it (its host's authority counts distinct linking hosts). */
  fromHost?: string;
}

export const PRIORITY = { seed: 1, link: 0.5 } as const;

/** `urls.skip_reason` of a URL the frontier refused. */
export const REFUSAL_REASONS: Record<RefusalReason, string> = {
  'host-budget': `${ErrorCode.HostBudget}: its host has had its share of URLs (TRAWL_MAX_URLS_PER_HOST)`,
  'query-variants': `${ErrorCode.QueryVariants}: its URL pattern has had its share of variants (TRAWL_MAX_QUERY_VARIANTS for one path's queries, TRAWL_MAX_DATE_VARIANTS for one calendar's dates)`,
};

export interface LinkSource {
  url: string;
  hash: Buffer;
  depth: number;
  /** Its seed's own depth limit (a seeds job's `max_depth`), passed on to what it links to. */
  maxDepth?: number | null;
  /** A sitemap: its entries are URLs the site names, not links (see `linkPriority`). */
  sitemap?: boolean;
  /** A page fetched again (a re-crawl): what it links to that is new is likely news (see `linkPriority`). */
  recrawl?: boolean;
}

/** Where a link was found, for its priority within its host. */
export interface LinkContext {
  /** The link's own depth (its page's + 1). */
  depth: number;
  sitemap?: boolean;
  recrawl?: boolean;
}

/**
 * A discovered URL's priority within its host (0..1, mapped onto the priority bands): a link on a
 * seed 0.5 (`PRIORITY.link`), `depth` less per level below that; a URL a sitemap names
 * `sitemap`; `fresh` more when found on a re-crawled page. Only URLs the seen-set has never seen
 * are queued, so the `fresh` bonus goes to new links on a page seen before — a news site's new
 * articles — and puts them ahead of deep links queued earlier. Seeds (1), re-crawls (from 0.75)
 * and operator refreshes keep their own.
 */
export function linkPriority(context: LinkContext, weights: CrawlPolicy['linkPriority']): number {
  const base = context.sitemap ? weights.sitemap : PRIORITY.link - weights.depth * Math.max(0, context.depth - 1);
  return Math.min(1, Math.max(0, base + (context.recrawl ? weights.fresh : 0)));
}

/**
 * Why a link is recorded without being fetched, judged by its URL alone, or null. Today: its file
 * name ends in an extension the policy skips (a PDF, an image, … that a crawl keeping only HTML
 * would fetch just to drop at the headers, spending a turn at its host).
 */
export function linkSkipReason(url: string, policy: ResolvedPolicy): string | null {
  const extension = ignoredExtension(url, policy.skipExtensions);
  return extensionSkipReason(extension);
}

function extensionSkipReason(extension: string | null): string | null {
  return extension === null ? null : `${ErrorCode.ContentType}: links to .${extension} files are not fetched (TRAWL_SKIP_EXTENSIONS)`;
}

/**
 * Normalizes a page's links and keeps those the policy allows (scheme, length, scope, depth).
 * Links the policy skips by their URL (`linkSkipReason`) come back with a `skipReason`: they are
 * recorded as skipped, never queued. Pure CPU; counts what it drops or skips.
 */
export function candidatesFromLinks(
  links: readonly { url: string; nofollow: boolean }[],
  page: LinkSource,
  policy: ResolvedPolicy,
  counters: Pick<Counters, 'add'>,
  now: number,
): Candidate[] {
  const depth = page.depth + 1;
  const seedLimit = page.maxDepth ?? null;
  if ((policy.policy.maxDepth !== null && depth > policy.policy.maxDepth) || (seedLimit !== null && depth > seedLimit)) {
    counters.add('tooDeep', links.length);
    return [];
  }
  const priority = linkPriority({ depth, sitemap: page.sitemap, recrawl: page.recrawl }, policy.policy.linkPriority);
  // A sitemap's entries are its own site's URLs, not votes for them.
  const fromHost = page.sitemap ? undefined : hostOf(page.url);
  const out: Candidate[] = [];
  const seen = new Set<string>();
  for (const link of links) {
    if (link.nofollow) continue;
    // One parse per link: scope, host and extension are read from what normalizing found.
    const normalized = normalizeLink(link.url, undefined, policy.normalize);
    if (!normalized.ok) {
      counters.add('invalidUrls');
      continue;
    }
    const url = normalized.url;
    if (seen.has(url) || url === page.url) continue;
    seen.add(url);
    if (!hostInScope(policy.scope, normalized.host)) {
      counters.add('outOfScope');
      continue;
    }
    if (policy.traps && trapReason(url, policy.traps, now)) {
      counters.add('trapped');
      continue;
    }
    const candidate: Candidate = {
      url,
      hash: fingerprint(url),
      host: normalized.host,
      depth,
      maxDepth: seedLimit,
      hops: 0,
      flags: 0,
      priority,
      from: page.hash,
      ...(fromHost === undefined || fromHost === normalized.host ? {} : { fromHost }),
      variantKey: variantKey(url),
      ...(normalized.spelled === undefined ? {} : { spelled: normalized.spelled }),
    };
    const skipReason = extensionSkipReason(ignoredPathExtension(normalized.path, policy.skipExtensions));
    if (skipReason !== null) {
      counters.add('skippedExtensions');
      candidate.skipReason = skipReason;
    }
    out.push(candidate);
  }
  return out;
}

/**
 * What these candidates tell of their hosts' rank (see `Frontier.noteHosts`): each distinct host
 * that links to another, and each seed's priority. Known URLs count too: a link is a vote
 * whether or not its target was seen before.
 */
export function hostNotes(candidates: readonly Candidate[]): HostNote[] {
  const notes: HostNote[] = [];
  const links = new Set<string>();
  for (const c of candidates) {
    if ((c.flags & UrlFlag.Seed) !== 0) notes.push({ host: c.host, seedPriority: c.priority });
    if (c.fromHost === undefined || c.fromHost === c.host) continue;
    const pair = `${c.host} ${c.fromHost}`;
    if (links.has(pair)) continue;
    links.add(pair);
    notes.push({ host: c.host, linkedFrom: c.fromHost });
  }
  return notes;
}

/** A seed URL as a candidate, or the reason it is not one. */
export function seedCandidate(raw: string, policy: ResolvedPolicy): Candidate | { error: string } {
  const normalized = normalizeUrl(raw, undefined, policy.normalize);
  if (!normalized.ok) return { error: `${normalized.code}: ${normalized.reason}` };
  const url = normalized.url;
  return {
    url,
    hash: fingerprint(url),
    host: hostOf(url),
    depth: 0,
    hops: 0,
    flags: UrlFlag.Seed,
    priority: PRIORITY.seed,
    from: null,
    ...(normalized.spelled === undefined ? {} : { spelled: normalized.spelled }),
  };
}

export interface DiscoveryDeps {
  seen: SeenSet;
  db: Database;
  frontier: Frontier;
  counters: Counters;
  logger: Logger;
  /** The current policy's per-host URL budget and per-pattern caps on query and date variants (0: none). */
  limits: () => { maxUrlsPerHost: number; maxQueryVariants: number; maxDateVariants: number };
  /**
   * Why robots.txt (as already cached; nothing is fetched here) forbids each URL, or null. A URL
   * known to be disallowed is recorded as skipped and never queued, so it never takes a turn at
   * its host.
   */
  robotsVerdicts?: (urls: readonly string[]) => Promise<(string | null)[]>;
}

export interface DiscoveryResult {
  /** Queued now: never discovered before. */
  queued: number;
  /** Already known. */
  known: number;
}

/**
 * Feeds discovered URLs to the frontier, batched across every page a process is working on:
 * seen-set (Bloom, then the exact store for "maybe seen"), insert into `urls` (the insert decides
 * who queues a URL when workers race), push to the frontier, confirm as queued. One round trip
 * per step per batch.
 */
export class Discovery {
  private readonly batcher: Batcher<Candidate, boolean>;

  constructor(
    private readonly deps: DiscoveryDeps,
    options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 2000, maxWaitMs: PROCESS_BATCH_WAIT_MS },
  ) {
    this.batcher = new Batcher<Candidate, boolean>({
      maxItems: options.maxBatch,
      maxWaitMs: options.maxWaitMs,
      urgentWaitMs: URGENT_BATCH_WAIT_MS,
      run: (items) => this.run(items),
    });
  }

  /**
   * Resolves when every candidate is queued or known to be seen. `recheck`: the links come from
   * a page processed again after its first try died (a redelivered process entry), so a link
   * that try inserted may never have reached the frontier; those still unconfirmed in PostgreSQL
   * are pushed now (flagged Verify), not left for the repair sweep minutes later. `urgent`: the
   * links' host (the page's) has nothing else queued and waits on them: their batch waits only
   * URGENT_BATCH_WAIT_MS for company, and runs beside one already running.
   */
  async add(candidates: readonly Candidate[], options: { recheck?: boolean; urgent?: boolean } = {}): Promise<DiscoveryResult> {
    const queued = await this.batcher.add([...candidates], { urgent: options.urgent === true });
    let n = queued.filter(Boolean).length;
    if (options.recheck) n += await this.requeueUnconfirmed(candidates.filter((_, i) => !queued[i]));
    return { queued: n, known: queued.length - n };
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }

  /**
   * Pushes URLs that were inserted but never confirmed queued (a process died between the
   * insert and the push). Returns how many it pushed.
   */
  async repair(olderThanMs: number, limit = 5000): Promise<number> {
    const rows = await this.deps.db.unqueued(olderThanMs, limit);
    if (rows.length === 0) return 0;
    // Flagged Verify: a row left `new` may have been pushed after all (the crash fell between the
    // push and its confirmation), and of two copies in the frontier only the first is fetched.
    const queued = await this.pushAndMark(rows.map((r) => ({ url: r.url, hash: r.hash, host: r.host, depth: r.depth, hops: 0, flags: UrlFlag.Verify, priority: PRIORITY.link })));
    this.deps.counters.add('repaired', queued.length);
    this.deps.logger.warn({ repaired: queued.length, refused: rows.length - queued.length }, 'pushed URLs left unqueued by a crash');
    return rows.length;
  }

  /** Of these known candidates, pushes those PostgreSQL holds as inserted but never queued. Returns how many it pushed. */
  private async requeueUnconfirmed(known: readonly Candidate[]): Promise<number> {
    const byHash = new Map<string, Candidate>();
    for (const c of known) if (c.skipReason === undefined) byHash.set(c.hash.toString('latin1'), c);
    if (byHash.size === 0) return 0;
    const unconfirmed = await this.deps.db.unconfirmed([...byHash.values()].map((c) => c.hash));
    if (unconfirmed.size === 0) return 0;
    // Flagged Verify: the first try may have pushed them after all (it died before confirming).
    const items = [...unconfirmed].map((k) => {
      const c = byHash.get(k) as Candidate;
      return { ...c, flags: c.flags | UrlFlag.Verify };
    });
    const queued = await this.pushAndMark(items);
    this.deps.counters.add('repaired', queued.length);
    this.deps.logger.warn({ repaired: queued.length, refused: items.length - queued.length }, 'pushed links a dead try of their page left unqueued');
    return queued.length;
  }

  /**
   * Pushes URLs to the frontier under the policy's limits and records the outcome: what it took
   * is `queued` (in Redis, or spilled: then its row keeps its band and entry until a refill
   * takes it), what it refused (host budget, query variants) `skipped` with why. Returns those
   * it took.
   */
  private async pushAndMark<T extends PushItem & { hash: Buffer }>(items: readonly T[]): Promise<T[]> {
    const { frontier, db, counters } = this.deps;
    if (items.length === 0) return [];
    // A push retried after an error may have landed the first time: the copies it pushes again
    // are flagged Verify, so at most one of two is fetched.
    let tries = 0;
    const { pushed, refused, refusedVariants, refusals, spills } = await this.withRetries(() =>
      frontier.push(tries++ === 0 ? items : items.map((item) => ({ ...item, flags: item.flags | UrlFlag.Verify })), { ...this.deps.limits(), spill: true }),
    );
    counters.add('urlsPushed', pushed);
    counters.add('overBudget', refused);
    counters.add('overQueryVariants', refusedVariants);
    counters.add('urlsSpilled', spills.length);
    const refusedAt = new Set(refusals.map((r) => r.index));
    const spilledAt = new Set(spills.map((s) => s.index));
    const queued = items.filter((_, i) => !refusedAt.has(i));
    await this.withRetries(() =>
      Promise.all([
        db.markQueued(items.filter((_, i) => !refusedAt.has(i) && !spilledAt.has(i)).map((c) => c.hash)),
        db.markSpilled(spills.map((s) => ({ hash: (items[s.index] as T).hash, band: s.band, entry: s.entry }))),
        db.markRefused(refusals.map((r) => ({ hash: (items[r.index] as T).hash, reason: REFUSAL_REASONS[r.reason] }))),
      ]),
    );
    return queued;
  }

  private async withRetries<T>(step: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await step();
      } catch (error) {
        if (attempt >= 3) throw error;
        this.deps.logger.warn({ err: error, attempt }, 'discovery batch failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  }

  /**
   * Per candidate, why it is recorded as skipped rather than queued: its own `skipReason`, else
   * what the cached robots.txt says (asked only for the others) of the URL trawl will request and
   * of the URL as the site spelled it, when they differ: robots.txt rules are written for the
   * site's own spelling (`Disallow: /search?q=` must stop `/search?q=shoes&page=2` though its
   * canonical form sorts it to `/search?page=2&q=shoes`). Null: queue it.
   */
  private async skipReasons(candidates: readonly Candidate[]): Promise<(string | null)[]> {
    const asked = candidates.filter((c) => c.skipReason === undefined);
    const spelled = asked.filter((c) => c.spelled !== undefined);
    const ask = [...asked.map((c) => c.url), ...spelled.map((c) => c.spelled as string)];
    const verdicts = this.deps.robotsVerdicts && ask.length > 0 ? await this.deps.robotsVerdicts(ask) : [];
    const bySpelling = new Map(spelled.map((c, i) => [c, verdicts[asked.length + i] ?? null]));
    const forbidden = asked.map((c, i) => verdicts[i] ?? bySpelling.get(c) ?? null);
    this.deps.counters.add('robotsDisallowed', forbidden.filter((f) => f !== null).length);
    let next = 0;
    return candidates.map((c) => (c.skipReason !== undefined ? c.skipReason : (forbidden[next++] ?? null)));
  }

  private async run(items: Candidate[]): Promise<boolean[]> {
    const { seen, db, counters } = this.deps;
    // One candidate per fingerprint; the shallowest depth wins.
    const byHash = new Map<string, Candidate>();
    for (const item of items) {
      const key = item.hash.toString('latin1');
      const existing = byHash.get(key);
      if (!existing || item.depth < existing.depth) byHash.set(key, item);
    }
    const distinct = [...byHash.values()];
    // Hosts' rank is a hint: a failed note is logged, never fails the batch.
    const notes = hostNotes(items);
    const noting =
      notes.length === 0
        ? Promise.resolve()
        : this.deps.frontier.noteHosts(notes).catch((error: unknown) => this.deps.logger.warn({ err: error, notes: notes.length }, 'could not note links and seeds for host rank'));
    // Each step is retried on its own: a retry of the whole batch after the insert would find
    // its URLs seen and leave them unqueued until the repair sweep.
    const { unseen, skipped } = await this.withRetries(async () => {
      const verdicts = await seen.filterUnseen(distinct.map((c) => c.hash));
      counters.add('bloomFalsePositives', verdicts.falsePositives);
      const fresh = distinct.filter((_, i) => verdicts.unseen[i]);
      return { unseen: fresh, skipped: await this.skipReasons(fresh) };
    });

    const { inserted, rejected } = await this.withRetries(() => db.insertDiscovered(
      unseen.map((c, i) => ({ hash: c.hash, url: c.url, host: c.host, depth: c.depth, from: c.from, skipReason: skipped[i] ?? null })),
    ));
    if (rejected.length > 0) this.deps.logger.warn({ rejected: rejected.map((r) => ({ url: r.url, reason: r.reason })) }, 'PostgreSQL refused discovered URLs; they are dropped');
    seen.markKnown(unseen.map((c) => c.hash));
    const insertedKeys = new Set(inserted.map((h) => h.toString('latin1')));
    const toPush = unseen.filter((c, i) => insertedKeys.has(c.hash.toString('latin1')) && skipped[i] === null);
    // What the frontier refuses is skipped for good, with why; only what it takes counts as queued.
    const queued = await this.pushAndMark(toPush);
    counters.add('urlsNew', queued.length);
    await noting;
    const pushedKeys = new Set(queued.map((c) => c.hash.toString('latin1')));
    return items.map((item) => pushedKeys.has(item.hash.toString('latin1')) && byHash.get(item.hash.toString('latin1')) === item);
  }
}

export interface DiscoveryParts {
  seen: SeenSet;
  db: Database;
  frontier: Frontier;
  counters: Counters;
  robots: RobotsCache;
  policy: PolicyFollower;
  clock: Clock;
  logger: Logger;
  /** Limits used until a policy is published. */
  defaults: { maxUrlsPerHost: number; maxQueryVariants: number; maxDateVariants: number };
}

/** A discovery batcher that follows the published policy's limits and consults the robots.txt cache. */
export function createDiscovery(parts: DiscoveryParts): Discovery {
  let limits = parts.defaults;
  const refresh = () =>
    void parts.policy.get().then((p) => {
      if (p) limits = { maxUrlsPerHost: p.policy.maxUrlsPerHost, maxQueryVariants: p.policy.maxQueryVariants, maxDateVariants: p.policy.maxDateVariants };
    });
  refresh();
  return new Discovery({
    seen: parts.seen,
    db: parts.db,
    frontier: parts.frontier,
    counters: parts.counters,
    logger: parts.logger,
    limits: () => {
      refresh();
      return limits;
    },
    robotsVerdicts: async (urls) => {
      const policy = await parts.policy.get();
      if (!policy) return urls.map(() => null);
      const refusals = await cachedRefusals({ cache: parts.robots, now: () => parts.clock.now() }, policy, urls);
      return refusals.map((r) => (r === null ? null : `${r.code}: ${r.reason}`));
    },
  });
}
