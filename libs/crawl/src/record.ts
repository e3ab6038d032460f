import type { PageRecord } from '@trawl/db';
import type { FetchResult } from '@trawl/fetch';
import type { Attempt } from './attempt.js';

/** A page's row as the pipeline writes it; the re-crawl schedule is planned when it is written (`Records`). */
export type FetchRecord = Omit<PageRecord, 'changeFrequencyS' | 'lastChangedAt' | 'nextCrawlAt' | 'recrawl'>;

/** What reading a page's content adds to its record (a 200 whose body was kept). */
export type ContentFields = Partial<
  Pick<FetchRecord, 'contentHash' | 'storageKey' | 'charset' | 'noindex' | 'nofollow' | 'canonicalUrl' | 'linksFound' | 'dedup' | 'text' | 'render'>
>;

/** How an attempt ended, for its record. */
export interface RecordEnd {
  state: 'done' | 'failed' | 'skipped';
  /** When it was decided, for a URL that produced no response. */
  at: number;
  errorCode?: string | null;
  errorMessage?: string | null;
  redirectTo?: string | null;
}

/**
 * The record of an attempt's URL: who it is, what the response (if any) said, what its content
 * added, and how it ended. The one place a record is assembled. Validators (ETag,
 * Last-Modified) are kept only for a page recorded as done: a conditional GET must never be
 * answered 304 for a page the crawl does not hold.
 */
export function recordOf(attempt: Pick<Attempt, 'job' | 'hash'>, end: RecordEnd, response: FetchResult | null, content: ContentFields = {}): FetchRecord {
  const { job } = attempt;
  const done = end.state === 'done';
  return {
    hash: attempt.hash,
    url: job.url,
    host: job.host,
    depth: job.depth,
    state: end.state,
    httpStatus: response?.status ?? null,
    contentType: response?.contentType ?? null,
    contentHash: null,
    storageKey: null,
    fetchedAt: response?.startedAt ?? end.at,
    contentLength: response?.body.length ?? null,
    truncated: response?.truncated ?? false,
    fetchMs: response ? response.endedAt - response.startedAt : null,
    redirectTo: end.redirectTo ?? null,
    canonicalUrl: null,
    linksFound: null,
    errorCode: end.errorCode ?? null,
    errorMessage: end.errorMessage?.slice(0, 1000) ?? null,
    etag: done ? (response?.etag ?? null) : null,
    lastModified: done ? (response?.lastModified ?? null) : null,
    charset: null,
    noindex: false,
    nofollow: false,
    bodySkipped: response?.bodySkipped ?? false,
    ...content,
  };
}
