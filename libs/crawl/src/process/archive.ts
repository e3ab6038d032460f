import type { NearDupIndex } from '@trawl/db';
import type { FetchResult } from '@trawl/fetch';
import type { ContentStore } from '@trawl/store';
import { type HttpExchange, payloadDigest, type WarcWriter } from '@trawl/warc';
import type { Capture } from './duplicates.js';
import { storeFailure } from './store-body.js';

/** How the crawl judged a 200's body, for its WARC records. */
export interface ArchivedPage {
  /** The body was captured before (an exact duplicate's first page, or this page unchanged): a revisit refers to it. */
  earlier: Capture | null;
  /** A near-duplicate: the cluster's first page and the SimHash distance (a metadata record says so). */
  near: { url: string | null; distance: number } | null;
  /** The body was kept (false: a near-duplicate under TRAWL_NEAR_DUP_STORE_BODY=false, only described). */
  bodyKept: boolean;
  /** The page's DOM as headless Chromium rendered it (a `conversion` record refers to the capture), if it was rendered. */
  rendered?: Buffer | null;
}

type Writer = Pick<WarcWriter, 'writeExchange' | 'writeRevisit' | 'writeMetadata' | 'writeConversion' | 'close'>;

/**
 * WARC records written while crawling (TRAWL_WARC_WRITE), one writer per worker process: a
 * `response` and its `request` for a 200 whose body is new; a `revisit` (identical payload
 * digest) for a body captured before — an exact duplicate refers to the first page that had
 * it, an unchanged re-crawl and a 304 to the page's own earlier capture; and a `metadata`
 * record naming a near-duplicate's cluster; and a `conversion` record holding the DOM a rendered
 * page had in headless Chromium, referring to the page's capture. The request record holds the headers the fetcher
 * set (see `FetchResult.wire`); the response keeps the headers as received, with the body as
 * decoded (Content-Encoding moved to X-Archive-Orig-*). A job retried after its records were
 * written writes them again (delivery is at least once).
 */
export class CrawlArchive {
  constructor(
    private readonly writer: Writer,
    private readonly pages: Pick<NearDupIndex, 'storedCaptures'>,
    private readonly store: Pick<ContentStore, 'get'>,
  ) {}

  /** A 200 (or other ok status) with its body. */
  async page(response: FetchResult, page: ArchivedPage): Promise<void> {
    await this.guard(async () => {
      let recordId: string | undefined;
      if (page.earlier) {
        const { revisit } = await this.writer.writeRevisit({
          ...this.common(response),
          refersTo: { url: page.earlier.url, date: page.earlier.capturedAt },
          payloadDigest: payloadDigest(response.body),
          response: this.responseHead(response),
        });
        recordId = revisit.recordId;
      } else if (page.bodyKept) {
        const exchange = this.exchange(response);
        recordId = (await this.writer.writeExchange(exchange)).response.recordId;
      }
      if (page.near) {
        const fields: [string, string][] = [];
        if (page.near.url) fields.push(['near-duplicate-of', page.near.url]);
        fields.push(['simhash-distance', String(page.near.distance)]);
        if (!page.bodyKept) fields.push(['body', 'not kept (TRAWL_NEAR_DUP_STORE_BODY=false)']);
        await this.writer.writeMetadata({ url: response.url, date: response.startedAt, fields, concurrentTo: recordId });
      }
      if (page.rendered) {
        await this.writer.writeConversion({ url: response.url, date: response.endedAt, contentType: 'text/html; charset=utf-8', body: page.rendered, ...(recordId ? { refersTo: recordId } : {}) });
      }
    });
  }

  /** A 304: a revisit of the body the page's row holds (read back from the store for its digest). */
  async notModified(response: FetchResult, urlHash: Buffer): Promise<void> {
    await this.guard(async () => {
      const capture = (await this.pages.storedCaptures([urlHash])).get(urlHash.toString('latin1'));
      const body = capture?.storageKey ? await this.store.get(capture.storageKey) : null;
      if (!capture || body === null) {
        // Nothing to refer to (the body was never kept): the 304 is archived as it came.
        await this.writer.writeExchange(this.exchange(response));
        return;
      }
      await this.writer.writeRevisit({
        ...this.common(response),
        refersTo: { url: capture.url, date: capture.capturedAt },
        payloadDigest: payloadDigest(body),
        response: this.responseHead(response),
      });
    });
  }

  close(): Promise<readonly string[]> {
    return this.writer.close();
  }

  private common(response: FetchResult): Pick<HttpExchange, 'url' | 'fetchedAt' | 'ip' | 'request'> {
    const { wire } = response;
    return {
      url: response.url,
      fetchedAt: response.startedAt,
      ip: wire?.remoteAddress ?? null,
      request: wire ? { method: wire.request.method, headers: wire.request.headers, httpVersion: wire.httpVersion } : undefined,
    };
  }

  private responseHead(response: FetchResult): { status: number; statusText?: string; headers: HttpExchange['response']['headers']; httpVersion?: string } {
    const { wire } = response;
    return { status: response.status, statusText: wire?.statusText, headers: wire?.rawHeaders ?? response.headers, httpVersion: wire?.httpVersion };
  }

  private exchange(response: FetchResult): HttpExchange {
    return {
      ...this.common(response),
      response: { ...this.responseHead(response), body: response.body, bodyForm: 'decoded', truncated: response.truncated },
    };
  }

  /** A WARC file that cannot be written is a store failure: fatal on a full or read-only disk, else retried. */
  private async guard(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      throw storeFailure(error, 'could not write WARC records');
    }
  }
}
