import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeLog } from './analyze.js';
import type { FileKind } from './files.js';
import { FILE_KINDS, FILE_TYPES, fileChunks, fileSize } from './files.js';
import { canonical, httpGet, miniCrawl } from './testing/http.js';
import { TestWeb } from './testweb.js';

describe('file bodies', () => {
  it('start with their format\'s magic bytes, stay in their size range and are the same every time', () => {
    for (const kind of FILE_KINDS) {
      const ref = { seed: 5, host: 1, page: 7, index: 0, kind };
      const bytes = Buffer.concat([...fileChunks(ref, 10_000)]);
      expect(bytes.byteLength).toBe(fileSize(ref));
      expect(bytes.byteLength).toBeGreaterThanOrEqual(FILE_TYPES[kind].minBytes);
      expect(bytes.byteLength).toBeLessThanOrEqual(FILE_TYPES[kind].maxBytes);
      expect(bytes.subarray(0, FILE_TYPES[kind].magic.length).equals(FILE_TYPES[kind].magic)).toBe(true);
      expect(Buffer.concat([...fileChunks(ref)]).equals(bytes)).toBe(true);
      // Not padding: the bytes vary.
      expect(new Set(bytes.subarray(100, 1100)).size).toBeGreaterThan(200);
    }
    const sizes = new Set(Array.from({ length: 20 }, (_, page) => fileSize({ seed: 5, host: 0, page, index: 0, kind: 'pdf' })));
    expect(sizes.size).toBeGreaterThan(15);
  });
});

describe('pages that link files', () => {
  let web: TestWeb;

  beforeAll(async () => {
    web = await TestWeb.start({ hosts: 3, pagesPerHost: 12, linksPerPage: 3, crossHostLinks: 1, seed: 8, baseAddress: '127.1.57.1', fileLinks: { perPage: 1.5, hosts: [0, 1] } });
  });
  afterAll(async () => {
    await web?.stop();
  });

  const fileLinks = (host: number): string[] =>
    Array.from({ length: 12 }, (_, p) => web.links(host, p)).flat().filter((l) => l.kind === 'file').map((l) => l.url as string);

  it('links one or two files from each page of the listed hosts, none elsewhere', () => {
    for (let p = 0; p < 12; p++) {
      const count = web.links(0, p).filter((l) => l.kind === 'file').length;
      expect([1, 2]).toContain(count);
    }
    expect(fileLinks(2)).toEqual([]);
    const all = [...fileLinks(0), ...fileLinks(1)];
    expect(all.length).toBeGreaterThan(24);
    expect(new Set(all.map((u) => /\.(\w+)$/.exec(u)?.[1])).size).toBeGreaterThanOrEqual(6);
    for (const link of web.links(0, 3).filter((l) => l.kind === 'file')) {
      expect(link.follow).toBe(false);
      expect(link.href).toMatch(/^\/(docs|images|downloads|media|fonts)\/3-\d\.(pdf|jpg|png|zip|mp4|docx|exe|woff2)$/);
    }
  });

  it('serves each file with its binary Content-Type and length, streamed; HEAD gives the headers only', async () => {
    const seenKinds = new Set<string>();
    for (const url of fileLinks(0)) {
      const reply = await httpGet(url);
      const kind = (Object.keys(FILE_TYPES) as FileKind[]).find((k) => url.endsWith(`.${FILE_TYPES[k].extension}`)) as FileKind;
      seenKinds.add(kind);
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe(FILE_TYPES[kind].contentType);
      expect(Number(reply.headers['content-length'])).toBe(reply.body.byteLength);
      expect(reply.body.byteLength).toBeGreaterThanOrEqual(4096);
      expect(reply.body.subarray(0, FILE_TYPES[kind].magic.length).equals(FILE_TYPES[kind].magic)).toBe(true);
      expect((await httpGet(url)).body.equals(reply.body)).toBe(true);
      const head = await httpGet(url, { method: 'HEAD' });
      expect({ status: head.status, length: head.headers['content-length'], body: head.body.byteLength }).toEqual({ status: 200, length: reply.headers['content-length'], body: 0 });
    }
    expect(seenKinds.size).toBeGreaterThanOrEqual(4);
    await web.idle();
    const entry = web.log.find((e) => e.resource === 'file' && e.method === 'GET');
    expect(entry?.bytes).toBe(Number((await httpGet(`${web.origins[0]}${entry?.pageKey}`)).headers['content-length']));
    // A file path that is not linked is 404, so is one on a host without files.
    expect((await httpGet(`${web.origins[0]}/docs/0-9.pdf`)).status).toBe(404);
    expect((await httpGet(fileLinks(0)[0]?.replace(web.origins[0] as string, web.origins[2] as string) as string)).status).toBe(404);
  });

  it('keeps files out of the HTML ground truth, in groundTruth().files, and counts requests for them apart', async () => {
    const truth = web.groundTruth(web.rootUrls());
    expect(truth.size).toBe(36);
    expect(truth).toEqual(new Set([0, 1, 2].flatMap((h) => Array.from({ length: 12 }, (_, p) => web.pageUrl(h, p)))));
    expect(truth.files).toEqual(new Set([...fileLinks(0), ...fileLinks(1)]));
    expect(web.groundTruth([web.pageUrl(2, 0)], 'host').files.size).toBe(0);

    // A crawler that fetches everything it finds requests every file; one that skips by extension none.
    web.clearLog();
    const greedy = await miniCrawl(web.rootUrls(), web.origins);
    expect(new Set([...greedy.fetched.keys()].filter((u) => truth.files.has(u)))).toEqual(truth.files);
    await web.idle();
    const all = analyzeLog(web.log, { minIntervalMs: 0, expected: truth });
    expect(all.files).toMatchObject({ requests: truth.files.size, distinct: truth.files.size });
    expect(all.files.bytes).toBeGreaterThan(truth.files.size * 4096);
    expect(Object.values(all.files.byExtension).reduce((a, b) => a + b, 0)).toBe(truth.files.size);
    expect(all.coverage).toMatchObject({ missingCount: 0, unexpectedCount: 0 });
    expect(all.ok).toBe(true);

    web.clearLog();
    const skipping = await miniCrawl(web.rootUrls(), web.origins, { skip: (url) => /\.(pdf|jpe?g|png|zip|mp4|docx|exe|woff2)$/.test(url) });
    expect([...skipping.fetched.keys()].filter((u) => truth.files.has(canonical(u)))).toEqual([]);
    await web.idle();
    expect(analyzeLog(web.log, { minIntervalMs: 0, expected: truth }).files).toEqual({ requests: 0, distinct: 0, bytes: 0, byExtension: {} });
  });
});
