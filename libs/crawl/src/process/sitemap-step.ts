import { describeError } from '@trawl/core';
import type { DuePage } from '@trawl/db';
import type { FetchResult } from '@trawl/fetch';
import { UrlFlag } from '@trawl/frontier';
import { candidatesFromLinks, type ResolvedPolicy } from '@trawl/model';
import { parseSitemap, sitemapDecision, sitemapLocationRule } from '@trawl/sitemap';
import { normalizeUrl } from '@trawl/url';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps, SitemapDeps } from '../deps.js';
import type { JobOutcome } from '../outcome.js';

/**
 * A sitemap, fetched under its host's gate like any URL. An index lists child sitemaps (followed
 * one level deep); a urlset lists pages: unknown ones are discovered (through scope, traps and
 * the seen-set, like links), and a known page whose `<lastmod>` is newer than its last visit is
 * pushed back into the frontier at once, at the top priority. Entries outside the sitemap's
 * location (sitemaps.org: its directory, or its robots.txt's site when robots.txt named it) are
 * counted and skipped. Nothing is stored for the sitemap itself but its row in the `sitemaps` table.
 */
export async function handleSitemap(deps: PipelineDeps, attempt: Attempt, policy: ResolvedPolicy, response: FetchResult): Promise<JobOutcome> {
  const sink = deps.sitemaps;
  const url = attempt.job.url;
  const done = (summary: Record<string, unknown>): JobOutcome => ({ ack: true, result: { outcome: 'done', summary: { sitemap: true, ...summary } } });
  if (!sink) return done({ ignored: 'sitemaps are off' });
  deps.counters.add('sitemapsFetched');
  const place = await sink.store.placeOf(url);
  if (response.status >= 300 && response.status < 400 && response.location) {
    // A moved sitemap (http → https, a CDN): the target is the sitemap from now on, vouched for as the original was.
    const [target] = canonicalSitemapUrls([response.location]);
    if (target) await sink.store.add(place?.origin ?? new URL(target).origin, [target], place?.source ?? 'robots', place?.parent ?? null);
  }
  if (response.status < 200 || response.status >= 300 || response.body.length === 0) {
    await sink.store.recordFetch(url, { status: response.status, entries: 0, truncated: false, error: response.status >= 300 ? `HTTP ${response.status}` : 'empty body' });
    return done({ status: response.status });
  }
  const parsed = await parseSitemap(response.body, { maxEntries: sink.maxEntries });
  const inLocation = sitemapLocationRule({ sitemapUrl: url, robotsOrigin: place?.robotsOrigin ?? null }, parsed.kind === 'index' ? 'index' : 'urlset');
  let outside = 0;
  const within = <T extends { url: string }>(items: T[]): T[] => {
    const kept = items.filter((item) => inLocation(item.url));
    outside += items.length - kept.length;
    deps.counters.add('sitemapOutside', items.length - kept.length);
    return kept;
  };
  const errorOf = () => {
    const problems = [...parsed.errors.slice(0, 3), ...(outside > 0 ? [`${outside} entries outside the sitemap's location skipped`] : [])];
    return problems.length > 0 ? problems.join('; ') : null;
  };
  if (parsed.kind === 'index') {
    // One level: the children of a child index are not followed (an index of indexes is not a sitemap).
    const listed = place?.source === 'index' ? [] : canonicalSitemapUrls(parsed.entries.map((e) => e.loc));
    const children = within(listed.map((child) => ({ url: child }))).map((c) => c.url);
    const error = errorOf();
    await sink.store.add(new URL(url).origin, children, 'index', url);
    await sink.store.recordFetch(url, { status: response.status, entries: parsed.entries.length, truncated: parsed.truncated, error });
    return done({ index: children.length });
  }

  const now = deps.clock.now();
  const lastmods = new Map<string, number | null>();
  for (const entry of parsed.entries) {
    const normalized = normalizeUrl(entry.loc, undefined, policy.normalize);
    if (normalized.ok) lastmods.set(normalized.url, entry.lastmod);
  }
  const candidates = within(
    candidatesFromLinks(
      parsed.entries.map((e) => ({ url: e.loc, nofollow: false })),
      { url, hash: attempt.hash, depth: 0, sitemap: true },
      policy,
      deps.counters,
      now,
    ),
  );
  const error = errorOf();
  const checked = await sink.store.lastChecked(candidates.map((c) => c.hash));
  const unknown = candidates.filter((c) => !checked.has(c.hash.toString('latin1')) || checked.get(c.hash.toString('latin1')) === null);
  const changed = candidates.filter((c) => {
    const key = c.hash.toString('latin1');
    if (!checked.has(key)) return false;
    return sitemapDecision(lastmods.get(c.url) ?? null, checked.get(key) ?? null, now) === 'due-now-high-priority';
  });
  const taken = await sink.store.takePages(changed.map((c) => c.hash));
  await pushDueNow(sink, taken);
  deps.counters.add('sitemapUrls', parsed.entries.length);
  await sink.store.recordFetch(url, { status: response.status, entries: parsed.entries.length, truncated: parsed.truncated, error });
  return { ...done({ entries: parsed.entries.length, dueNow: taken.length }), discover: unknown };
}

/** Sitemap URLs in their canonical form (the frontier's and the table's key); unusable ones dropped. */
export function canonicalSitemapUrls(urls: readonly string[]): string[] {
  return urls.flatMap((raw) => {
    const normalized = normalizeUrl(raw);
    return normalized.ok ? [normalized.url] : [];
  });
}

/** Pages a sitemap says changed: back into the frontier now, at the top priority, as re-crawls. */
async function pushDueNow(sink: SitemapDeps, pages: readonly DuePage[]): Promise<void> {
  if (pages.length === 0) return;
  await sink.frontier.push(
    pages.map((p) => ({ url: p.url, host: p.host, depth: p.depth, hops: 0, flags: UrlFlag.Recrawl, priority: 1 })),
    { maxUrlsPerHost: 0, maxQueryVariants: 0 },
  );
  await sink.markQueued(pages.map((p) => p.hash));
}

/** A sitemap job that ended without a usable response: its outcome goes to the sitemaps table, not to a page record. */
export async function sitemapFailure(deps: PipelineDeps, attempt: Attempt, outcome: JobOutcome): Promise<JobOutcome> {
  if (!outcome.record || !deps.sitemaps) return outcome;
  const { record, ...rest } = outcome;
  await deps.sitemaps.store
    .recordFetch(attempt.job.url, { status: record.httpStatus, entries: 0, truncated: false, error: record.errorMessage ?? record.errorCode })
    .catch((error: unknown) => deps.logger.warn({ err: describeError(error), url: attempt.job.url }, 'could not record a sitemap fetch'));
  return rest;
}
