import { randomUUID } from 'node:crypto';
import type { Config } from '@trawl/config';
import { type Clock, ErrorCode, TrawlError } from '@trawl/core';
import { PRIORITY, type PolicyStore, withSeeds } from '@trawl/model';
import type { Database, RebuildRow } from '@trawl/db';
import { type Frontier, type RestoreItem, UrlFlag } from '@trawl/frontier';
import type { Redis } from '@trawl/redis';
import type { Logger } from '@trawl/telemetry';
import { publishConfigPolicy } from './publish.js';
import { RECRAWL_PRIORITY_FLOOR } from './recrawl.js';

export interface RebuildDeps {
  redis: Redis;
  namespace: string;
  db: Pick<Database, 'urlsForRebuild' | 'seedUrls' | 'markQueued' | 'now' | 'pool' | 'options'>;
  frontier: Pick<Frontier, 'restore'>;
  /** The seen-set's Bloom filter (the exact half is `urls` itself). */
  bloom: { addIfNew(fingerprints: readonly Buffer[]): Promise<boolean[]> };
  /**
   * Loads the newest usable seen-set snapshot into the filter (replacing what it holds) and says
   * which URL ids it covers, or why none was loaded. Absent: every URL is added to the filter.
   */
  seenSnapshot?: () => Promise<SeenSnapshotLoad>;
  policyStore: Pick<PolicyStore, 'load' | 'update'>;
  config: Readonly<Config>;
  /** Writes the namespace settings: the step that lets schedulers dispatch again (before the scan). */
  recordSettings: () => Promise<void>;
  /** Marks the frontier's partitions live again (claims and pushes resume): just before the settings. */
  markLive: () => Promise<void>;
  /** Puts operator pauses back from their durable copy in PostgreSQL; returns how many. */
  restorePauses: () => Promise<number>;
  /** Puts operators' rendering overrides back from PostgreSQL into Redis; returns how many. */
  restoreRenderOverrides: () => Promise<number>;
  /** Whether the namespace's settings are in Redis (an intact crawl needs no rebuild). */
  settingsPresent: () => Promise<boolean>;
  /**
   * How long a fetch may hold its host (TRAWL_FETCH_DEADLINE_MS plus the margin): no restored
   * host is fetched before this long after the rebuild began, so a fetch in flight when Redis
   * was lost (its host token lost with it) never overlaps a new one, and the politeness delay
   * since it has passed.
   */
  fetchHoldMs: number;
  clock: Clock;
  logger: Logger;
}

/** What loading a seen-set snapshot gave: the URL ids it covers, or why there was none to load. */
export type SeenSnapshotLoad = { id: string; coversUrlId: number } | { fallback: string };

export interface RebuildProgress {
  /** `urls` rows read so far. */
  rows: number;
  /** URLs put back into the frontier. */
  queued: number;
  /** Settled URLs counted in their hosts' budgets. */
  counted: number;
  /** Rows another (or an earlier, interrupted) run of this rebuild had restored already. */
  alreadyRestored: number;
  /** Rows added to the seen-set's Bloom filter (those above the snapshot's URL id, if one was loaded). */
  seen: number;
}

export interface RebuildReport extends RebuildProgress {
  namespace: string;
  generation: string;
  /** True when this run picked up an interrupted rebuild. */
  resumed: boolean;
  /** The seen-set came from this snapshot, plus the URLs with a higher id than `seenFromUrlId`. */
  seenSnapshot: string | null;
  /** URLs with an id up to this were in the snapshot (0: no snapshot, every URL was added). */
  seenFromUrlId: number;
  seeds: number;
  /** Rows queued or changed by the live crawl while the rebuild ran (left to it). */
  leftToCrawl: number;
  /** How long after this run began it handed the crawl back (dispatch resumed); 0 if an earlier run had. */
  handedBackMs: number;
  durationMs: number;
}

export interface RebuildOptions {
  /** Rows per page of the scan (and per frontier call). */
  batch?: number;
  /** Rebuild even though the namespace's settings are in Redis (a Redis restored from an old backup). */
  force?: boolean;
  onProgress?: (progress: RebuildProgress) => void;
}

/** `<ns>:rebuild`: the rebuild in progress (generation, start time, cursor), so an interrupted one resumes. */
export const rebuildKey = (namespace: string): string => `${namespace}:rebuild`;

/**
 * `trawl frontier rebuild`: restores a crawl whose Redis data was lost from PostgreSQL, which
 * knows every URL and its state.
 *
 * - Reads `urls` in fingerprint order, one keyset page at a time (never an offset, never one long
 *   transaction), adding every fingerprint to the seen-set's Bloom filter and putting back into
 *   the frontier every URL not settled (`new`, `queued`), flagged Verify: one whose in-flight
 *   fetch is recorded while the rebuild runs is then not fetched again. A queued URL that was
 *   fetched before is a re-crawl (the re-crawl sweep's flag and band); re-crawls due but not yet
 *   taken are left to the sweep, which takes them as usual. Settled URLs count in their hosts'
 *   URL budgets again. Redis lost every host's due time and fetch token: no restored host is
 *   fetched before the rebuild began plus the fetch hold (or the politeness delay), so a fetch in
 *   flight when Redis was lost never overlaps a new one to its host.
 * - Idempotent: a rebuild is a generation with a cursor in `<ns>:rebuild`; each frontier
 *   partition remembers the last fingerprint it restored for that generation, so a rebuild that
 *   is interrupted and run again, or two run at once, queue every URL once. Rows changed since
 *   the rebuild began were queued into the new frontier by the live crawl and are left alone, so
 *   the crawl runs meanwhile.
 * - Before the scan it hands the crawl back (`handBack`): the crawl policy again (this process's
 *   configuration, its scope widened to every seed PostgreSQL knows), the operator pauses and
 *   rendering overrides, the live marks and the namespace settings. Schedulers waiting for the rebuild start dispatching
 *   then, and each host is fetched as soon as its URLs are restored (no earlier than its due
 *   time) rather than after the whole table. A scan stopped after the hand-back is resumed by
 *   running the rebuild again (no --force needed) or by a scheduler with TRAWL_AUTO_REBUILD
 *   (`rebuildStalled`). Until the scan has passed a host's settled URLs, its URL budget counts
 *   fewer than it will: links found on it meanwhile may take it past its budget.
 */
export async function rebuildFrontier(deps: RebuildDeps, options: RebuildOptions = {}): Promise<RebuildReport> {
  const started = Date.now();
  const { redis, namespace, db, logger } = deps;
  const key = rebuildKey(namespace);
  // A rebuild that handed the crawl back and then stopped (its process died mid-scan) left its
  // hash behind: the crawl runs, and this run finishes the scan.
  const handedBack = (await redis.hget(key, 'handedBack')) !== null;
  if (!options.force && !handedBack && (await deps.settingsPresent())) {
    throw new TrawlError(
      ErrorCode.ConfigInvalid,
      `the crawl in namespace "${namespace}" is intact (its settings are in Redis): nothing to rebuild. If Redis was restored from an old backup, --force rebuilds all the same (URLs already queued may be queued twice; each is still fetched once).`,
      { action: 'fatal' },
    );
  }
  // One generation per rebuild, shared by every run that joins or resumes it.
  const resumed = (await redis.exists(key)) === 1;
  await redis.hsetnx(key, 'generation', randomUUID());
  await redis.hsetnx(key, 'since', String((await db.now()).getTime()));
  const state = await redis.hgetall(key);
  const generation = state.generation as string;
  const since = new Date(Number(state.since));
  // Hosts are due no earlier than this (the same for every run of this rebuild).
  await redis.hsetnx(key, 'notBefore', String(deps.clock.now() + Math.max(deps.fetchHoldMs, deps.config.policy.minDelayMs)));
  const notBefore = Number(await redis.hget(key, 'notBefore'));
  let cursor: Buffer | null = state.cursor ? Buffer.from(state.cursor, 'hex') : null;
  const seen = await seenSetStart(deps, key, state);
  const batch = Math.max(1, Math.min(1000, options.batch ?? 1000));
  logger.info({ namespace, generation, resumed, from: state.cursor ?? null }, 'rebuilding the frontier and the seen-set from PostgreSQL');

  const seeds = await db.seedUrls();
  if (!handedBack) await handBack(deps, key, seeds);
  const handedBackMs = handedBack ? 0 : Date.now() - started;
  const progress: RebuildProgress = { rows: 0, queued: 0, counted: 0, alreadyRestored: 0, seen: 0 };
  let leftToCrawl = 0;
  for (;;) {
    const rows = await db.urlsForRebuild(cursor, since, batch);
    if (rows.length === 0) break;
    const items = rows.flatMap((row) => {
      const item = restoreItemOf(row);
      if (item === null && row.changedSince && (row.state === 'new' || row.state === 'queued')) leftToCrawl += 1;
      return item === null ? [] : [item];
    });
    // `queued` first: should this run die before its frontier call, the rows are restored when the
    // rebuild resumes (it restores queued rows); the other order could leave a restored URL `new`
    // for the repair sweep to push a second time.
    await db.markQueued(items.filter((i) => i.queue).map((i) => i.hash));
    // The seen-set's part: only the URLs the snapshot does not cover. The frontier's: every row.
    const unseen = rows.filter((r) => r.id > seen.fromUrlId).map((r) => r.hash);
    const [, restored] = await Promise.all([unseen.length > 0 ? deps.bloom.addIfNew(unseen) : [], deps.frontier.restore(generation, items, notBefore)]);
    cursor = (rows[rows.length - 1] as RebuildRow).hash;
    await redis.hset(key, 'cursor', cursor.toString('hex'), 'beat', String(deps.clock.now()));
    progress.rows += rows.length;
    progress.seen += unseen.length;
    progress.queued += restored.queued;
    progress.counted += restored.counted;
    progress.alreadyRestored += restored.skipped;
    options.onProgress?.({ ...progress });
    if (rows.length < batch) break;
  }
  await redis.del(key);
  const report: RebuildReport = { namespace, generation, resumed, seenSnapshot: seen.snapshot, seenFromUrlId: seen.fromUrlId, ...progress, seeds: seeds.length, leftToCrawl, handedBackMs, durationMs: Date.now() - started };
  logger.info(report, 'frontier rebuilt');
  return report;
}

/**
 * Hands the crawl back before the scan: the policy (this configuration's, every seed in scope),
 * the operator pauses and rendering overrides, the live marks and, last, the namespace settings, which let schedulers
 * dispatch and workers fetch again. From then on each host is crawled as soon as the scan has
 * restored its URLs, instead of every host waiting for the whole table (minutes on a large
 * crawl). What the crawl does meanwhile is safe: a link it discovers that PostgreSQL already
 * knows is not queued again (the insert finds it), and the rows it queues or settles are left
 * alone by the scan. Marked `handedBack` in the rebuild's hash, so a run that resumes the scan
 * does not hand back twice and a scheduler can tell a stalled scan from a finished one.
 */
async function handBack(deps: RebuildDeps, key: string, seeds: readonly string[]): Promise<void> {
  const { logger } = deps;
  const published = await publishConfigPolicy(deps.policyStore, deps.config, { pagesBaseline: 0, logger });
  await deps.policyStore.update((stored) => withSeeds(stored ?? published, [...seeds]));
  // Operator pauses were lost with Redis: put them back (from PostgreSQL) before anything is claimed.
  const paused = await deps.restorePauses();
  if (paused > 0) logger.info({ paused }, 'operator pauses restored');
  // So were the rendering overrides: back before a worker fetches one of their hosts.
  const overrides = await deps.restoreRenderOverrides();
  if (overrides > 0) logger.info({ overrides }, 'rendering overrides restored');
  await deps.markLive();
  await deps.redis.hset(key, 'handedBack', '1', 'beat', String(deps.clock.now()));
  await deps.recordSettings();
  logger.info('the crawl is handed back: dispatching resumes while the scan restores each host\'s URLs');
}

/**
 * Whether a rebuild handed the crawl back and then stopped scanning (no progress for `stalledMs`):
 * its process died, and a scheduler with TRAWL_AUTO_REBUILD resumes it (`rebuildFrontier` picks
 * up at its cursor).
 */
export async function rebuildStalled(redis: Redis, namespace: string, now: number, stalledMs: number): Promise<boolean> {
  const [handedBack, beat] = await redis.hmget(rebuildKey(namespace), 'handedBack', 'beat');
  return handedBack !== null && now - Number(beat ?? 0) > stalledMs;
}

/**
 * Where this rebuild's seen-set starts, decided once per generation (kept in the rebuild's hash as
 * `seenFrom`, so a resumed run adds the same rows): the newest usable snapshot, loaded before the
 * scan, and then only URLs with a higher id are added; else (no snapshot, none usable, or a run of
 * an older version already scanning) every URL. A run that died while loading loads it again.
 */
async function seenSetStart(deps: RebuildDeps, key: string, state: Record<string, string>): Promise<{ fromUrlId: number; snapshot: string | null }> {
  const { redis, logger } = deps;
  if (state.seenFrom !== undefined) return { fromUrlId: Number(state.seenFrom), snapshot: state.seenSnapshot ?? null };
  let fromUrlId = 0;
  let snapshot: string | null = null;
  if (state.cursor !== undefined) {
    logger.info('seen-set: resuming a scan that adds every URL');
  } else if (deps.seenSnapshot === undefined) {
    logger.info('seen-set: snapshots are not configured; every URL is added to the filter');
  } else {
    const loaded = await deps.seenSnapshot();
    if ('fallback' in loaded) {
      logger.warn({ reason: loaded.fallback }, 'seen-set: no snapshot loaded; every URL is added to the filter');
    } else {
      ({ coversUrlId: fromUrlId, id: snapshot } = loaded);
      logger.info({ snapshot, coversUrlId: fromUrlId }, 'seen-set: snapshot loaded; URLs recorded after it are added to the filter');
    }
  }
  if ((await redis.hsetnx(key, 'seenFrom', String(fromUrlId))) === 1) {
    if (snapshot !== null) await redis.hset(key, 'seenSnapshot', snapshot);
    return { fromUrlId, snapshot };
  }
  // Another run of this rebuild decided first, and one of the two loads replaced the other's
  // filter: this run scans from the start, and adding from the lower id covers both.
  const decided = await redis.hmget(key, 'seenFrom', 'seenSnapshot');
  const theirs = Number(decided[0] ?? 0);
  return fromUrlId < theirs ? { fromUrlId, snapshot } : { fromUrlId: theirs, snapshot: decided[1] ?? null };
}

/**
 * What the frontier gets for one row: a URL not settled goes back into its host's queue (unless
 * the live crawl queued it since the rebuild began); a settled one that was ever queued (done,
 * failed) only counts in its host's budget; a skipped one (never queued) gets nothing.
 */
export function restoreItemOf(row: RebuildRow): RestoreItem | null {
  const base = { url: row.url, host: row.host, hash: row.hash, depth: row.depth, hops: 0 };
  if (row.state === 'new' || row.state === 'queued') {
    if (row.changedSince) return null;
    // Flags: a URL fetched before is a re-crawl (conditional GET, the re-crawl band); a seed keeps
    // its flag and priority. Verify is added by the frontier. Redirect hop counts are not kept in
    // PostgreSQL: a restored redirect target starts from 0 hops.
    const flags = (row.fetched ? UrlFlag.Recrawl : 0) | (row.seed ? UrlFlag.Seed : 0);
    const priority = row.fetched ? RECRAWL_PRIORITY_FLOOR : row.seed ? PRIORITY.seed : PRIORITY.link;
    // A spilled URL stays in PostgreSQL: only its host's spilled count is restored, and a refill
    // takes it from there.
    return { ...base, flags, priority, queue: true, ...(row.spilled ? { spilled: true } : {}) };
  }
  if (row.state === 'done' || row.state === 'failed') return { ...base, flags: 0, priority: PRIORITY.link, queue: false };
  return null;
}
