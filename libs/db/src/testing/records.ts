import { createHash } from 'node:crypto';
import type { DiscoveredUrl, PageRecord } from '../database.js';

/** A 16-byte fingerprint of a URL (tests only; the crawl's own is @trawl/url's). */
export const fp = (url: string): Buffer => createHash('sha256').update(url).digest().subarray(0, 16);

export const discovered = (url: string, depth = 1): DiscoveredUrl => ({ hash: fp(url), url, host: new URL(url).host, depth, from: null });

/** A done 200 page record fetched at 1_700_000_000_000, due again a day later; override any field. */
export const record = (url: string, overrides: Partial<PageRecord> = {}): PageRecord => ({
  hash: fp(url),
  url,
  host: new URL(url).host,
  depth: 1,
  state: 'done',
  httpStatus: 200,
  contentType: 'text/html',
  contentHash: 'abc',
  storageKey: 'ab/cd/abc.gz',
  fetchedAt: 1_700_000_000_000,
  contentLength: 100,
  truncated: false,
  fetchMs: 12,
  redirectTo: null,
  canonicalUrl: null,
  linksFound: 3,
  errorCode: null,
  errorMessage: null,
  changeFrequencyS: 86_400,
  lastChangedAt: 1_700_000_000_000,
  nextCrawlAt: 1_700_086_400_000,
  etag: '"e1"',
  lastModified: null,
  charset: 'UTF-8',
  noindex: false,
  nofollow: false,
  bodySkipped: false,
  ...overrides,
});
