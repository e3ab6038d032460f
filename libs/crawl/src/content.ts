import { duplicateHandling, type DuplicateHandling } from '@trawl/dedup';
import type { FetchResult } from '@trawl/fetch';
import { UrlFlag } from '@trawl/frontier';
import { mergeDirectives, parseXRobotsTag } from '@trawl/parse';
import type { FetchJobContext } from '@trawl/queue';
import { contentHash } from '@trawl/store';
import { type Candidate, candidatesFromLinks } from './discovery.js';
import type { DuplicateAnswer } from './duplicates.js';
import type { ResolvedPolicy } from './policy.js';
import type { PipelineDeps } from './process.js';
import type { FetchRecord } from './records.js';
import type { PageAnalysis } from './analyze.js';
import { inlineAnalyzer, type PageAnalyzer } from './analyzer.js';
import { isHtml, storeBody } from './stages.js';

/**
 * A 200's body (the host is already released): parse HTML once for links and text, fingerprint
 * the text, classify the body against the crawl's duplicates, then store the body (unless the
 * verdict says not to) and the text beside it, archive the exchange (TRAWL_WARC_WRITE), and fill
 * the record. Returns the links to discover: none when the page says nofollow or the verdict
 * says not to follow a duplicate's links.
 */
export async function keepContent(
  deps: Pick<PipelineDeps, 'store' | 'duplicates' | 'archive' | 'counters' | 'clock' | 'analyzer'>,
  job: FetchJobContext,
  policy: ResolvedPolicy,
  response: FetchResult,
  record: FetchRecord,
): Promise<Candidate[]> {
  const { data } = job;
  const { body } = response;
  // A body never downloaded (a type the crawl skips) says nothing new about the content.
  if (response.bodySkipped) return [];
  const analysis = isHtml(response) ? await analyzeHtmlPage(deps.analyzer ?? inlineAnalyzer, policy, response, record, data.u) : null;
  const parsed = analysis?.parsed ?? null;
  if (parsed) deps.counters.add('linksFound', parsed.links.length);
  const text = parsed?.text ?? null;
  const fingerprint = analysis?.simhash ?? null;

  if (body.length > 0) record.contentHash = contentHash(body);
  const classifying: Promise<DuplicateAnswer | null> =
    body.length > 0 && deps.duplicates
      ? deps.duplicates.classify({
          urlHash: record.hash,
          url: data.u,
          simhash: fingerprint,
          contentHash: record.contentHash as string,
          fetchedAt: response.startedAt,
          recrawl: (data.f & UrlFlag.Recrawl) !== 0,
          maxDistance: policy.dedup.nearDupDistance,
        })
      : Promise.resolve(null);
  // Every verdict keeps the body unless near-duplicates' bodies are dropped: only then does
  // storing wait for the verdict (otherwise it overlaps the lookups).
  const storing =
    body.length === 0
      ? null
      : policy.dedup.nearDupStoreBody
        ? storeBody(deps.store, body)
        : classifying.then((a) => (duplicateHandling(a?.verdict ?? null, policy.dedup).storeBody ? storeBody(deps.store, body) : null));
  const [answer, stored, storedText] = await Promise.all([
    classifying,
    storing,
    text !== null && text.wordCount > 0 ? storeBody(deps.store, Buffer.from(text.text, 'utf8'), 'page text') : null,
  ]);
  const verdict = answer?.verdict ?? null;
  const handling: DuplicateHandling = duplicateHandling(verdict, policy.dedup);
  if (verdict) deps.counters.add(verdict.kind === 'exact' ? 'duplicatesExact' : 'duplicatesNear');
  if (stored) record.storageKey = stored.storageKey;
  else if (body.length > 0) deps.counters.add('bodiesNotStored');
  record.dedup = { simhash: fingerprint, duplicateOf: verdict?.of ?? null, duplicateKind: verdict?.kind ?? null, duplicateDistance: verdict?.distance ?? null };
  record.text = {
    title: text?.title ?? null,
    description: text?.description ?? null,
    language: text?.language ?? null,
    wordCount: text === null ? null : text.wordCount,
    textKey: storedText?.storageKey ?? null,
  };

  if (deps.archive && body.length > 0) {
    await deps.archive.page(response, {
      earlier: answer?.earlier ?? null,
      near: verdict?.kind === 'near' ? { url: answer?.ofUrl ?? null, distance: verdict.distance } : null,
      bodyKept: stored !== null,
    });
  }

  if (parsed === null) return [];
  if (record.nofollow) {
    deps.counters.add('nofollowPages');
    return [];
  }
  if (!handling.followLinks) return [];
  return candidatesFromLinks(parsed.links, { url: data.u, hash: record.hash, depth: data.d, maxDepth: data.m ?? null }, policy, deps.counters, deps.clock.now());
}

/** Decode, parse (once) and fingerprint, and put what the markup says on the record. */
async function analyzeHtmlPage(analyzer: PageAnalyzer, policy: ResolvedPolicy, response: FetchResult, record: FetchRecord, url: string): Promise<PageAnalysis> {
  const token = policy.robots.productToken;
  const analysis = await analyzer.analyze({ body: response.body, charset: response.charset, url, maxLinks: policy.policy.maxLinksPerPage, productToken: token });
  const { parsed } = analysis;
  record.charset = analysis.charset;
  const directives = mergeDirectives(parsed.page.metaRobots, parseXRobotsTag(response.headers['x-robots-tag'], token));
  record.noindex = directives.noindex;
  record.nofollow = directives.nofollow;
  record.canonicalUrl = parsed.page.canonical;
  record.linksFound = parsed.links.length;
  return analysis;
}
