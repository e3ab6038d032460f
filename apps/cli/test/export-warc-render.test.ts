import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { Database } from '@trawl/db';
import { discovered, record } from '@trawl/db/testing';
import { createContentStore } from '@trawl/store';
import { readWarc } from '@trawl/warc/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * `trawl export warc` on a crawl with a rendered page, as the crawl leaves it: the page's row in
 * PostgreSQL (rendered, with its DOM's key) and its body and DOM in the content store. Judged
 * from the WARC: the DOM follows the page's response as a conversion record referring to it.
 */
const namespace = uniqueNamespace('warcdom');
const SPA = 'http://spa.example/';
const PLAIN = 'http://plain.example/';
const SHELL = Buffer.from('<!doctype html><html><body><div id="root"></div><script src="/app.js"></script></body></html>');
const DOM = Buffer.from('<!doctype html><html><body><div id="root"><a href="/a">a</a></div><script src="/app.js"></script></body></html>');
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trawl-warcdom-'));
  env = { TRAWL_NAMESPACE: namespace, DATABASE_URL, TRAWL_CONTENT_DIR: join(dir, 'content') };
  const store = createContentStore(loadConfig({ env }));
  const db = new Database({ url: DATABASE_URL, schema: namespace });
  try {
    await db.migrate();
    const [shell, dom, plain] = await Promise.all([store.put(SHELL), store.put(DOM), store.put(Buffer.from('<p>plain</p>'))]);
    await db.insertDiscovered([discovered(SPA), discovered(PLAIN)]);
    await db.recordPages([
      record(SPA, { storageKey: shell.key, contentHash: shell.contentHash, contentLength: SHELL.length, render: { rendered: true, reason: 'empty-app-root', domKey: dom.key } }),
      record(PLAIN, { storageKey: plain.key, contentHash: plain.contentHash, contentLength: 12, render: { rendered: false, reason: 'no-scripts' } }),
    ]);
  } finally {
    await db.close();
    await store.close();
  }
});

afterAll(async () => {
  await dropNamespace(namespace);
  await rm(dir, { recursive: true, force: true });
});

describe('trawl export warc: rendered pages', () => {
  it('writes a rendered page\'s DOM as a conversion record after its response, referring to it', async () => {
    const exported = trawl(['export', 'warc', '--out', join(dir, 'export')], env);
    expect((await exported.exited).code, exported.stderr()).toBe(0);
    const summary = JSON.parse(exported.stdout()) as { responses: number; conversions: number; files: string[] };
    expect(summary).toMatchObject({ responses: 2, conversions: 1 });
    const records = (await Promise.all(summary.files.map(readWarc))).flat().filter((r) => r.type !== 'warcinfo' && r.type !== 'request');
    const spa = records.filter((r) => r.url === SPA);
    expect(spa.map((r) => r.type)).toEqual(['response', 'conversion']);
    const [response, conversion] = spa;
    expect(response?.payload).toEqual(SHELL);
    expect(conversion?.payload).toEqual(DOM);
    expect(conversion?.header('WARC-Refers-To')).toBe(response?.header('WARC-Record-ID'));
    expect(conversion?.header('WARC-Target-URI')).toBe(SPA);
    expect(records.filter((r) => r.url === PLAIN).map((r) => r.type)).toEqual(['response']);
  }, 60_000);
});
