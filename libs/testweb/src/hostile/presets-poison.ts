/**
 * Hosts whose pages are valid HTML responses carrying values that break storage and URL code
 * downstream: NUL characters (PostgreSQL text cannot hold U+0000), lone UTF-16 surrogates (as
 * CESU-8 bytes and as character references), a 200 KB URL, links with schemes a crawler must not
 * fetch. A crawler must fetch every page once, skip the bad values, and finish.
 */
import { DEFAULT_ROBOTS_TXT } from '../respond.js';
import type { Preset, PresetEnv } from './preset.js';
import { expectation, robotsRoute, skeleton, urls } from './preset.js';
import type { Route } from './site.js';
import { HTML, htmlDoc, htmlRoute } from './site.js';
import type { PathLimit } from './types.js';

const NUL = '\u0000';
/** U+D800 and U+DC00 encoded as UTF-8 would encode them (CESU-8): invalid UTF-8 a decoder must replace. */
const CESU_HIGH = Buffer.from([0xed, 0xa0, 0x80]);
const CESU_LOW = Buffer.from([0xed, 0xb0, 0x80]);

/** A page built from strings (UTF-8) and raw byte runs, so invalid bytes survive as bytes. */
function rawDoc(head: readonly (string | Buffer)[], body: readonly (string | Buffer)[]): Buffer {
  const part = (p: string | Buffer): Buffer => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p);
  return Buffer.concat([
    part('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'),
    ...head.map(part),
    part('</head>\n<body>\n'),
    ...body.map(part),
    part('\n</body>\n</html>\n'),
  ]);
}

const okLink = (href: string): string => `<p>The page goes on: <a href="${href}">a well-formed link</a>.</p>\n`;

/** Length of the long URL's path. */
export const LONG_URL_CHARS = 200_000;

interface PoisonPage {
  name: string;
  body: (origin: string) => Buffer;
  note: string;
}

/** Targets that bad-scheme links name on the host itself: requesting one means a scheme was taken for http. */
export const BAD_SCHEME_PREFIXES = ['/js/', '/data/', '/vb/', '/file/', '/ftp/', '/ws/'];

function badSchemeLinks(origin: string): string[] {
  const host = new URL(origin).host;
  return [
    "javascript:location.href='/js/1'",
    'JaVaScRiPt:void(0)',
    'java\tscript:void(0)',
    ' javascript:void(0)',
    'data:text/html,%3Ca%20href%3D%22/data/1%22%3Ex%3C/a%3E',
    'data:text/html;base64,PGEgaHJlZj0iL2RhdGEvMiI+eDwvYT4=',
    'vbscript:msgbox(&quot;/vb/1&quot;)',
    'file:///etc/passwd',
    `file://${host}/file/1`,
    `ftp://${host}/ftp/1`,
    `ws://${host}/ws/1`,
    `wss://${host}/ws/2`,
    'http:///nohost',
    'http://[::1',
    'http://',
    'https://',
    'http://exa mple.invalid/',
    'http://%00/',
    'about:blank',
    'blob:http://example.invalid/0b7e',
    `view-source:${origin}/`,
    `/ok/nul${NUL}link`,
  ];
}

function poisonPages(): PoisonPage[] {
  return [
    {
      name: 'canonical-nul',
      body: (origin) => rawDoc([`<title>canonical with NUL</title><link rel="canonical" href="${origin}/a/1${NUL}tail">`], [okLink('/ok/canonical-nul')]),
      note: 'NUL in <link rel=canonical href>',
    },
    {
      name: 'title-nul',
      body: () => rawDoc([`<title>a title${NUL}with a NUL</title>`], [`<p>Body text with a NUL${NUL}too.</p>\n`, okLink('/ok/title-nul')]),
      note: 'NUL in <title> and in the text',
    },
    {
      name: 'description-nul',
      body: () => rawDoc([`<title>description with NUL</title><meta name="description" content="before${NUL}after">`], [okLink('/ok/description-nul')]),
      note: 'NUL in <meta name=description content>',
    },
    {
      name: 'base-nul',
      // The well-formed link is absolute: the broken base must not take it down too.
      body: (origin) => rawDoc([`<title>base with NUL</title><base href="${origin}/poison/${NUL}/">`], [okLink(`${origin}/ok/base-nul`), '<p><a href="relative">relative to the broken base</a></p>\n']),
      note: 'NUL in <base href>',
    },
    {
      name: 'refresh-nul',
      body: (origin) => rawDoc([`<title>refresh with NUL</title><meta http-equiv="refresh" content="0; url=${origin}/ok/refresh${NUL}x">`], [okLink('/ok/refresh-nul')]),
      note: 'NUL in <meta http-equiv=refresh content="0; url=…">',
    },
    {
      name: 'surrogate-bytes',
      body: (origin) =>
        rawDoc(
          ['<title>lone surrogate ', CESU_HIGH, ' bytes</title><meta name="description" content="low ', CESU_LOW, ' half">', `<link rel="canonical" href="${origin}/a/1`, CESU_HIGH, '">'],
          ['<p>Text with a lone high surrogate ', CESU_HIGH, ' and a low one ', CESU_LOW, '.</p>\n<p><a href="/poison/surrogate-', CESU_HIGH, '">surrogate in the href</a></p>\n', okLink('/ok/surrogate-bytes')],
        ),
      note: 'lone surrogates as CESU-8 bytes (ED A0 80, ED B0 80: invalid UTF-8) in title, description, canonical, text and an href',
    },
    {
      name: 'surrogate-refs',
      body: (origin) =>
        rawDoc(
          [`<title>lone surrogate &#xD800; reference</title><meta name="description" content="low &#xDC00; and NUL &#0; refs"><link rel="canonical" href="${origin}/a/1&#xD800;">`],
          ['<p>Text with &#xD800; and &#56320; and &#0;.</p>\n<p><a href="/poison/ref&#xDC00;x">surrogate reference in the href</a></p>\n', okLink('/ok/surrogate-refs')],
        ),
      note: 'lone surrogates (and NUL) as character references &#xD800; &#56320; &#0; in title, description, canonical, text and an href',
    },
    {
      name: 'long-url',
      body: () => rawDoc(['<title>a 200 KB link</title>'], [`<p><a href="/long/${'a'.repeat(LONG_URL_CHARS)}">a very long link</a></p>\n`, okLink('/ok/long-url')]),
      note: `a link whose path is ${LONG_URL_CHARS} characters`,
    },
    {
      name: 'bad-schemes',
      body: (origin) =>
        rawDoc(['<title>links with bad schemes</title>'], ['<ul>\n', ...badSchemeLinks(origin).map((href) => `<li><a href="${href}">bad</a></li>\n`), '</ul>\n', okLink('/ok/bad-schemes')]),
      note: 'links with javascript:, data:, vbscript:, file:, ftp:, ws:, about:, blob:, view-source: schemes, hosts missing or broken (http:///nohost, http://[::1), and a NUL',
    },
  ];
}

const once = (url: string): PathLimit => ({ url, match: 'exact', maxRequests: 1 });

export function poison(env: PresetEnv): Preset {
  const pages = poisonPages();
  const paths = pages.map((p) => `/poison/${p.name}`);
  const targets = pages.map((p) => `/ok/${p.name}`);
  const { routes, plain } = skeleton(env, 'poisoned values', paths);
  pages.forEach((p, i) => {
    routes.set(paths[i] as string, htmlRoute(p.body(env.origin)));
    routes.set(targets[i] as string, htmlRoute(htmlDoc(`linked only from ${paths[i]}`, ['/'])));
  });
  routes.set(`/long/${'a'.repeat(LONG_URL_CHARS)}`, htmlRoute(htmlDoc('the end of a very long link', ['/'])));
  const fetched = ['/', ...plain, ...paths, ...targets];
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, fetched),
      mustNotFetchPrefixes: urls(env, BAD_SCHEME_PREFIXES),
      limits: [...urls(env, fetched).map(once), { url: `${env.origin}/long/`, match: 'prefix', maxRequests: 1 }],
      notes: 'Each /poison/* page is a valid 200 text/html page carrying one poison: ' +
        pages.map((p) => `${p.name}: ${p.note}`).join('; ') +
        '. Each also links /ok/<name> (well-formed, linked nowhere else). Every page must be fetched exactly once (a crawler that fails ' +
        'to store a poisoned value and retries fetches it again), the bad-scheme targets never, the long URL at most once; and the crawl must end.',
    }),
  };
}

/**
 * The known failure, as found: ten pages (`/`, `/p/1` … `/p/9`, a chain), and `/p/5` carries
 * `<link rel="canonical" href="<origin>/p/1\u0000tail">`: an absolute URL of page 1, a NUL, then `tail`.
 */
export function poisonCanonical(env: PresetEnv): Preset {
  const routes = new Map<string, Route>();
  const paths = ['/', ...Array.from({ length: 9 }, (_, i) => `/p/${i + 1}`)];
  paths.forEach((path, i) => {
    const next = paths[i + 1];
    const links = [...(next === undefined ? [] : [next]), ...(i === 0 ? [] : ['/'])];
    const head = path === '/p/5' ? `<link rel="canonical" href="${env.origin}/p/1${NUL}tail">` : '';
    routes.set(path, htmlRoute(htmlDoc(`${env.kind} page ${i}`, links, { head }), { 'content-type': HTML }));
  });
  routes.set('/robots.txt', robotsRoute(DEFAULT_ROBOTS_TXT));
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, paths),
      limits: urls(env, paths).map(once),
      notes: `Ten pages in a chain; /p/5 has <link rel="canonical" href="${env.origin}/p/1\\u0000tail"> (absolute URL of /p/1, a NUL, "tail"). ` +
        'Every page must be fetched exactly once and the crawl must end.',
    }),
  };
}
