import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { ManualClock } from '@trawl/core';
import type { StoredCapture } from '@trawl/db';
import { simhash } from '@trawl/dedup';
import type { FetchResult } from '@trawl/fetch';
import { UrlFlag } from '@trawl/frontier';
import { policyFromConfig, resolvePolicy } from '@trawl/model';
import { decodeFetchJob } from '@trawl/queue';
import { LocalContentStore } from '@trawl/store';
import { fingerprint } from '@trawl/url';
import { payloadDigest, WarcWriter } from '@trawl/warc';
import { readWarc } from '@trawl/warc/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CrawlArchive } from './archive.js';
import { keepContent } from './content.js';
import type { DuplicateAnswer, DuplicateQuery } from './duplicates.js';
import { type Attempt, attemptOf } from '../attempt.js';

/**
 * The content stage of one 200: what is parsed, classified, stored, archived and followed, with
 * a real content store and a real WARC writer in a temporary directory. The duplicate verdicts
 * are given (the classifier itself runs against PostgreSQL in duplicates.test.ts).
 */
const URL_ = 'http://site.example/article';
const T0 = 1_700_000_000_000;
const HTML = `<!doctype html><html lang="en"><head><title>Rivers</title><meta name="description" content="On rivers"></head>
<body><nav><a href="/home">Home</a></nav><article><h1>Rivers</h1><p>The Danube flows through ten countries before it reaches the sea.</p>
<p>See <a href="/next">the next part</a>.</p></article></body></html>`;

let dir: string;
let store: LocalContentStore;
let writer: WarcWriter;
let answers: DuplicateAnswer[];
let queries: DuplicateQuery[];
let captures: Map<string, StoredCapture>;
let counted: Record<string, number>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trawl-content-'));
  store = new LocalContentStore({ dir: join(dir, 'content'), fsync: false });
  writer = new WarcWriter({ dir: join(dir, 'warc'), hostname: 'test', pid: 1 });
  answers = [];
  queries = [];
  captures = new Map();
  counted = {};
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

function response(body: string, extra: Partial<FetchResult> = {}): FetchResult {
  const bytes = Buffer.from(body);
  return {
    url: URL_,
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    contentType: 'text/html',
    charset: 'utf-8',
    location: null,
    body: bytes,
    truncated: false,
    bodySkipped: false,
    rawBytes: bytes.length,
    startedAt: T0,
    firstByteAt: T0 + 5,
    endedAt: T0 + 10,
    etag: null,
    lastModified: null,
    wire: {
      request: { method: 'GET', headers: { host: 'site.example', 'user-agent': 'trawl/test', accept: 'text/html' } },
      httpVersion: '1.1',
      statusText: 'OK',
      rawHeaders: [['Content-Type', 'text/html; charset=utf-8']],
      remoteAddress: '127.0.0.9',
    },
    ...extra,
  };
}

const job = (flags = 0): Attempt =>
  attemptOf({ id: 'j', job: decodeFetchJob({ u: URL_, h: 'site.example', p: 0, d: 0, x: 0, f: flags, b: 2, l: 'l' }), token: 't', attempt: 1, maxAttempts: 3, signal: undefined });

function deps(archive = false, storeText = false) {
  return {
    store,
    storeText,
    clock: new ManualClock(T0),
    counters: { add: (name: string, by = 1) => void (counted[name] = (counted[name] ?? 0) + by) },
    duplicates: {
      classify: async (q: DuplicateQuery) => {
        queries.push(q);
        return answers.shift() ?? { verdict: null, ofUrl: null, earlier: null };
      },
    },
    archive: archive ? new CrawlArchive(writer, { storedCaptures: async () => captures }, store) : undefined,
  };
}

const policyWith = (env: Record<string, string> = {}) => resolvePolicy(policyFromConfig(loadConfig({ env }), [URL_]));
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const FIRST = fingerprint('http://site.example/first');

describe('keepContent', () => {
  const TEXT = 'Rivers\nThe Danube flows through ten countries before it reaches the sea.\nSee the next part.';

  it('a new page: body stored, fingerprint and text recorded, links followed; the text itself not stored (the body gives it back)', async () => {
    const { content: record, discover: links } = await keepContent(deps(), job(), policyWith(), response(HTML));
    expect(links.map((c) => c.url).sort()).toEqual(['http://site.example/home', 'http://site.example/next']);
    expect(queries).toEqual([{ urlHash: fingerprint(URL_), url: URL_, simhash: simhash(TEXT), contentHash: sha256(HTML), fetchedAt: T0, recrawl: false, maxDistance: 3 }]);
    expect(record).toMatchObject({ contentHash: sha256(HTML), storageKey: `sha256:${sha256(HTML)}`, charset: 'UTF-8', linksFound: 2 });
    expect(record.dedup).toEqual({ simhash: simhash(TEXT), duplicateOf: null, duplicateKind: null, duplicateDistance: null });
    expect(record.text).toEqual({ title: 'Rivers', description: 'On rivers', language: 'en', wordCount: 16, textKey: null });
    expect(await store.has(`sha256:${sha256(TEXT)}`)).toBe(false);
    expect((await store.get(record.storageKey as string))?.toString()).toBe(HTML);
  });

  it('with TRAWL_CONTENT_STORE_TEXT: the text stored beside the body, its key recorded', async () => {
    const { content: record } = await keepContent(deps(false, true), job(), policyWith(), response(HTML));
    expect(record.text).toEqual({ title: 'Rivers', description: 'On rivers', language: 'en', wordCount: 16, textKey: `sha256:${sha256(TEXT)}` });
    expect((await store.get(record.text?.textKey as string))?.toString()).toBe(TEXT);
    expect((await store.get(record.storageKey as string))?.toString()).toBe(HTML);
  });

  it('a near-duplicate under TRAWL_NEAR_DUP_STORE_BODY=false and FOLLOW_LINKS=false: text kept, body and links not', async () => {
    answers.push({ verdict: { kind: 'near', of: FIRST, distance: 2 }, ofUrl: 'http://site.example/first', earlier: null });
    const policy = policyWith({ TRAWL_NEAR_DUP_STORE_BODY: 'false', TRAWL_NEAR_DUP_FOLLOW_LINKS: 'false', TRAWL_NEAR_DUP_DISTANCE: '2' });
    const { content: record, discover: links } = await keepContent(deps(), job(UrlFlag.Recrawl), policy, response(HTML));
    expect(links).toEqual([]);
    expect(queries[0]).toMatchObject({ maxDistance: 2, recrawl: true });
    expect(record.storageKey).toBeNull();
    expect(record.contentHash).toBe(sha256(HTML));
    expect(record.dedup).toMatchObject({ duplicateOf: FIRST, duplicateKind: 'near', duplicateDistance: 2 });
    // No stored body could give the text back: it is stored itself.
    expect(record.text?.textKey).toBe(`sha256:${sha256(TEXT)}`);
    expect((await store.get(record.text?.textKey as string))?.toString()).toBe(TEXT);
    expect(await store.has(`sha256:${sha256(HTML)}`)).toBe(false);
    expect(counted).toMatchObject({ duplicatesNear: 1, bodiesNotStored: 1 });
  });

  it('an exact duplicate: stored once (content-addressed), recorded against its first page, links followed by default', async () => {
    answers.push({ verdict: { kind: 'exact', of: FIRST, distance: 0 }, ofUrl: 'http://site.example/first', earlier: { url: 'http://site.example/first', capturedAt: T0 - 1000 } });
    const { content: record, discover: links } = await keepContent(deps(), job(), policyWith({ TRAWL_NEAR_DUP_STORE_BODY: 'false' }), response(HTML));
    expect(links).toHaveLength(2);
    expect(record.storageKey).toBe(`sha256:${sha256(HTML)}`);
    expect(record.dedup).toMatchObject({ duplicateOf: FIRST, duplicateKind: 'exact', duplicateDistance: 0 });
    expect(counted).toMatchObject({ duplicatesExact: 1 });
  });

  it('nofollow pages and non-HTML bodies: no links; a body without text is classified by its hash alone', async () => {
    const { content: nofollow, discover } = await keepContent(deps(), job(), policyWith(), response(HTML.replace('<head>', '<head><meta name="robots" content="nofollow">')));
    expect(discover).toEqual([]);
    expect(nofollow.nofollow).toBe(true);

    const { content: pdf, discover: links } = await keepContent(deps(), job(), policyWith({ TRAWL_NON_HTML: 'store' }), response('%PDF-1.4 binary', { contentType: 'application/pdf', headers: { 'content-type': 'application/pdf' } }));
    expect(links).toEqual([]);
    expect(queries[1]).toMatchObject({ simhash: null, contentHash: sha256('%PDF-1.4 binary') });
    expect(pdf.dedup).toEqual({ simhash: null, duplicateOf: null, duplicateKind: null, duplicateDistance: null });
    expect(pdf.text).toEqual({ title: null, description: null, language: null, wordCount: null, textKey: null });
    expect(pdf.storageKey).toMatch(/^sha256:/);
  });

  it('writes WARC records: response + request for a new body, revisit for a repeat, metadata for a near-duplicate, revisit for a 304', async () => {
    const d = deps(true);
    await keepContent(d, job(), policyWith(), response(HTML));
    answers.push({ verdict: { kind: 'exact', of: FIRST, distance: 0 }, ofUrl: 'http://site.example/first', earlier: { url: 'http://site.example/first', capturedAt: T0 - 1000 } });
    await keepContent(d, job(), policyWith(), response(HTML, { url: 'http://mirror.example/article' }));
    answers.push({ verdict: { kind: 'near', of: FIRST, distance: 1 }, ofUrl: 'http://site.example/first', earlier: null });
    await keepContent(d, job(), policyWith(), response(`${HTML}<p>x</p>`, { url: 'http://site.example/print' }));
    captures.set(fingerprint(URL_).toString('latin1'), { url: URL_, contentHash: sha256(HTML), storageKey: `sha256:${sha256(HTML)}`, capturedAt: new Date(T0) });
    await d.archive?.notModified(response('', { status: 304, startedAt: T0 + 60_000 }), fingerprint(URL_));
    const [file] = await d.archive!.close();

    const records = (await readWarc(file as string)).filter((r) => r.type !== 'warcinfo');
    expect(records.map((r) => `${r.type} ${r.url}`)).toEqual([
      `response ${URL_}`,
      `request ${URL_}`,
      'revisit http://mirror.example/article',
      'request http://mirror.example/article',
      'response http://site.example/print',
      'request http://site.example/print',
      'metadata http://site.example/print',
      `revisit ${URL_}`,
      `request ${URL_}`,
    ]);
    const [response1, request1, revisit, , , , metadata, notModified] = records;
    expect(response1?.payload.toString()).toBe(HTML);
    expect(response1?.header('WARC-IP-Address')).toBe('127.0.0.9');
    expect(request1?.record.httpHeaders?.headers.get('user-agent')).toBe('trawl/test');
    expect(revisit?.header('WARC-Refers-To-Target-URI')).toBe('http://site.example/first');
    expect(revisit?.header('WARC-Refers-To-Date')).toBe(new Date(T0 - 1000).toISOString());
    expect(revisit?.header('WARC-Payload-Digest')).toBe(payloadDigest(Buffer.from(HTML)));
    expect(metadata?.payload.toString()).toContain('near-duplicate-of: http://site.example/first');
    expect(metadata?.header('WARC-Concurrent-To')).toBe(records[4]?.header('WARC-Record-ID'));
    expect(notModified?.header('WARC-Refers-To-Target-URI')).toBe(URL_);
    expect(notModified?.header('WARC-Payload-Digest')).toBe(payloadDigest(Buffer.from(HTML)));
    expect(notModified?.record.httpHeaders?.statusCode).toBe(304);
  });

  it('a rendered page: links, text and duplicates from its DOM; the body stored and archived as fetched, the DOM beside it as a conversion', async () => {
    const shell = '<!doctype html><html><head><title>App</title></head><body><div id="root"></div><script src="/app.js"></script></body></html>';
    const d = deps(true);
    const { content: record, discover } = await keepContent(d, job(), policyWith(), response(shell), null, Buffer.from(HTML));
    expect(discover.map((c) => c.url).sort()).toEqual(['http://site.example/home', 'http://site.example/next']);
    expect(record).toMatchObject({ contentHash: sha256(shell), storageKey: `sha256:${sha256(shell)}`, linksFound: 2, text: { title: 'Rivers' } });
    // Classified by what it shows: the DOM's hash and SimHash, not the shell every page shares.
    expect(queries[0]).toMatchObject({ contentHash: sha256(HTML), simhash: record.dedup?.simhash });
    const [file] = await d.archive!.close();
    const records = (await readWarc(file as string)).filter((r) => r.type !== 'warcinfo');
    expect(records.map((r) => r.type)).toEqual(['response', 'request', 'conversion']);
    expect(records[0]?.payload.toString()).toBe(shell);
    expect(records[2]?.payload.toString()).toBe(HTML);
    expect(records[2]?.header('WARC-Refers-To')).toBe(records[0]?.header('WARC-Record-ID'));
    // A DOM no one stored cannot give its text back: the text is stored.
    expect(record.text?.textKey).toBe(`sha256:${sha256(TEXT)}`);
  });

  it('a rendered page whose DOM the fetch stage stored: its text is not stored again', async () => {
    const shell = '<!doctype html><html><head><title>App</title></head><body><div id="root"></div></body></html>';
    const { content: record } = await keepContent(deps(), job(), policyWith(), response(shell), null, Buffer.from(HTML), `sha256:${sha256(HTML)}`);
    expect(record.text).toMatchObject({ title: 'Rivers', wordCount: 16, textKey: null });
    expect(await store.has(`sha256:${sha256(TEXT)}`)).toBe(false);
  });
});
