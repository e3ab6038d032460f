import { duplicateHandling, followsLinksWhateverTheVerdict } from '@trawl/dedup';
import type { FetchResult } from '@trawl/fetch';
import { UrlFlag } from '@trawl/frontier';
import { type Candidate, candidatesFromLinks, type ResolvedPolicy } from '@trawl/model';
// The directives alone: the HTML parser is the analysis thread's, not the process stage's.
import { mergeDirectives, parseXRobotsTag } from '@trawl/parse/directives';
import { contentHash } from '@trawl/store';
import type { PageRef } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import type { ContentFields } from '../record.js';
import type { PageAnalysis } from './analyze.js';
import { inlineAnalyzer, type PageAnalyzer } from './analyzer.js';
import type { DuplicateAnswer } from './duplicates.js';
import { isHtml, type StoredBody, storeBody } from './store-body.js';

/** What keeping a page's content adds: the record's content fields and the links to discover. */
export interface KeptContent {
  content: ContentFields;
  discover: Candidate[];
}

/**
 * A 200's body (the host is already released): parse HTML once for links and text, fingerprint
 * the text, classify the body against the crawl's duplicates, then store the body (unless the
 * verdict says not to) and archive the exchange (TRAWL_WARC_WRITE). The text is stored beside
 * the body when `storeText` says so, or when nothing stored could give it back: the body was
 * not kept, or the text came from a rendered DOM that was not stored; otherwise an export
 * extracts it from the stored body again (the same decoding and extraction, so the same text).
 * The links to discover are none when the page says nofollow or the verdict says not to follow
 * a duplicate's links.
 */
export async function keepContent(
  deps: Pick<PipelineDeps, 'store' | 'storeText' | 'duplicates' | 'archive' | 'counters' | 'clock' | 'analyzer'>,
  attempt: PageRef,
  policy: ResolvedPolicy,
  response: FetchResult,
  /** The body as the fetch stage stored it already (not stored again, its hash not computed again). */
  storedAtFetch: StoredBody | null = null,
  /** The page's rendered DOM: its links, directives, text, SimHash and duplicate verdict come from it (the body is still what is stored). */
  dom: Buffer | null = null,
  /** Where the fetch stage stored that DOM (null: nowhere, so the text cannot be extracted from it again later). */
  domKey: string | null = null,
  /**
   * Discovers links at once, for a page whose host waits on them: when the policy follows a
   * duplicate's links anyway, they go as soon as the page is parsed, beside the duplicate lookup
   * and the storing rather than after them, and are not returned.
   */
  discoverNow?: (candidates: Candidate[]) => Promise<unknown>,
): Promise<KeptContent> {
  const { job } = attempt;
  const { body } = response;
  // A body never downloaded (a type the crawl skips) says nothing new about the content.
  if (response.bodySkipped) return { content: {}, discover: [] };
  const read = dom === null ? response : { ...response, body: dom, charset: 'utf-8' };
  const analysis = isHtml(response) ? await analyzeHtml(deps.analyzer ?? inlineAnalyzer, policy, read, job.url, attempt.urgent === true) : null;
  const parsed = analysis?.parsed ?? null;
  if (parsed) deps.counters.add('linksFound', parsed.links.length);
  const text = parsed?.text ?? null;
  const simhash = analysis?.simhash ?? null;
  const hash = body.length === 0 ? null : (storedAtFetch?.contentHash ?? contentHash(body));
  const early = discoverNow !== undefined && analysis !== null && followsLinksWhateverTheVerdict(policy.dedup);
  const earlyLinks = early ? linksToFollow(deps, attempt, policy, analysis, true) : [];
  const discovering = earlyLinks.length > 0 ? discoverNow?.(earlyLinks) : null;

  const classifying: Promise<DuplicateAnswer | null> =
    hash !== null && deps.duplicates
      ? deps.duplicates.classify({
          urlHash: attempt.hash,
          url: job.url,
          simhash,
          // A rendered page is a duplicate by what it shows: SPA shells are byte-identical.
          contentHash: dom === null ? hash : contentHash(dom),
          fetchedAt: response.startedAt,
          recrawl: (job.flags & UrlFlag.Recrawl) !== 0,
          maxDistance: policy.dedup.nearDupDistance,
        })
      : Promise.resolve(null);
  const keepBody = (): Promise<StoredBody> => (storedAtFetch ? Promise.resolve(storedAtFetch) : storeBody(deps.store, body));
  // Every verdict keeps the body unless near-duplicates' bodies are dropped: only then does
  // storing wait for the verdict (otherwise it overlaps the lookups).
  const storing =
    body.length === 0
      ? null
      : policy.dedup.nearDupStoreBody
        ? keepBody()
        : classifying.then((a) => (duplicateHandling(a?.verdict ?? null, policy.dedup).storeBody ? keepBody() : null));
  // The text is stored when asked to, or when nothing stored could give it back: a DOM no one
  // stored, or a body not kept (a near-duplicate's, under nearDupStoreBody off).
  const storeText = (): Promise<StoredBody> | null =>
    text !== null && text.wordCount > 0 ? storeBody(deps.store, Buffer.from(text.text, 'utf8'), 'page text') : null;
  const storingText =
    deps.storeText || (dom !== null && domKey === null) || storing === null ? storeText() : storing.then((kept) => (kept === null ? storeText() : null));
  const [answer, stored, storedText] = await Promise.all([classifying, storing, storingText, discovering]);
  const verdict = answer?.verdict ?? null;
  if (verdict) deps.counters.add(verdict.kind === 'exact' ? 'duplicatesExact' : 'duplicatesNear');
  if (!stored && body.length > 0) deps.counters.add('bodiesNotStored');

  if (deps.archive && body.length > 0) {
    await deps.archive.page(response, {
      earlier: answer?.earlier ?? null,
      near: verdict?.kind === 'near' ? { url: answer?.ofUrl ?? null, distance: verdict.distance } : null,
      bodyKept: stored !== null,
      rendered: dom,
    });
  }

  const content: ContentFields = {
    ...(analysis ? { ...analysis.markup, charset: dom === null ? analysis.markup.charset : (response.charset ?? analysis.markup.charset) } : {}),
    contentHash: hash,
    storageKey: stored?.storageKey ?? null,
    dedup: { simhash, duplicateOf: verdict?.of ?? null, duplicateKind: verdict?.kind ?? null, duplicateDistance: verdict?.distance ?? null },
    text: {
      title: text?.title ?? null,
      description: text?.description ?? null,
      language: text?.language ?? null,
      wordCount: text === null ? null : text.wordCount,
      textKey: storedText?.storageKey ?? null,
    },
  };
  return { content, discover: early ? [] : linksToFollow(deps, attempt, policy, analysis, duplicateHandling(verdict, policy.dedup).followLinks) };
}

/** The page's links as candidates, unless the page says nofollow or its duplicate verdict says not to follow them. */
function linksToFollow(
  deps: Pick<PipelineDeps, 'counters' | 'clock'>,
  attempt: PageRef,
  policy: ResolvedPolicy,
  analysis: HtmlAnalysis | null,
  followDuplicates: boolean,
): Candidate[] {
  if (analysis === null) return [];
  if (analysis.markup.nofollow) {
    deps.counters.add('nofollowPages');
    return [];
  }
  if (!followDuplicates) return [];
  const { job } = attempt;
  const recrawl = (job.flags & UrlFlag.Recrawl) !== 0;
  return candidatesFromLinks(analysis.parsed.links, { url: job.url, hash: attempt.hash, depth: job.depth, maxDepth: job.maxDepth, recrawl }, policy, deps.counters, deps.clock.now());
}

type HtmlAnalysis = PageAnalysis & { markup: Required<Pick<ContentFields, 'charset' | 'noindex' | 'nofollow' | 'canonicalUrl' | 'linksFound'>> };

/** Decode, parse (once) and fingerprint, and what the markup (with the X-Robots-Tag header) says about the page. */
async function analyzeHtml(analyzer: PageAnalyzer, policy: ResolvedPolicy, response: FetchResult, url: string, urgent: boolean): Promise<HtmlAnalysis> {
  const token = policy.robots.productToken;
  const input = { body: response.body, charset: response.charset, url, maxLinks: policy.policy.maxLinksPerPage, productToken: token };
  const analysis = await analyzer.analyze(input, { urgent });
  const { parsed } = analysis;
  const directives = mergeDirectives(parsed.page.metaRobots, parseXRobotsTag(response.headers['x-robots-tag'], token));
  return {
    ...analysis,
    markup: { charset: analysis.charset, noindex: directives.noindex, nofollow: directives.nofollow, canonicalUrl: parsed.page.canonical, linksFound: parsed.links.length },
  };
}
