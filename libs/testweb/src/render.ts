/**
 * Turns the link table into HTML. Every href produced here resolves (per WHATWG URL, honouring
 * `<base href>`) to a URL whose request key is the target page's canonical path.
 */
import { fileLabel } from './files.js';
import type { Link, PageSpec, VariantKind, WebModel } from './model.js';
import { contentHost, filePath, pagePath, pageSpec, variantPath } from './model.js';
import { hashInts, mulberry32, pick } from './prng.js';
import { article, nearCopy, pageTitle, renderArticle } from './text.js';

/** `http://127.1.0.7:PORT` for a host index. */
export type OriginOf = (host: number) => string;

function splitQuery(path: string): [string, string] {
  const q = path.indexOf('?');
  return q === -1 ? [path, ''] : [path.slice(0, q), path.slice(q)];
}

function addParam(path: string, param: string): string {
  const [p, query] = splitQuery(path);
  return query === '' ? `${p}?${param}` : `${p}?${param}&${query.slice(1)}`;
}

function noisyPath(path: string, link: Extract<Link, { kind: 'page' }>): string {
  const [p, query] = splitQuery(path);
  const slash = p.lastIndexOf('/');
  switch (link.noise) {
    case 'none':
      return path;
    case 'fragment':
      return `${path}#${link.token % 2 === 0 ? 'top' : `s${link.token % 100}`}`;
    case 'utm':
      return addParam(path, 'utm_source=x&utm_medium=y');
    case 'fbclid':
      return addParam(path, `fbclid=IwAR${link.token.toString(36)}`);
    case 'gclid':
      return addParam(path, `gclid=Cj0K${link.token.toString(36)}`);
    case 'percent': {
      // Escape the last character of the path: /p/3 → /p/%33, /q → /%71.
      const last = p.charCodeAt(p.length - 1);
      if (p.length < 2 || Number.isNaN(last)) return path;
      return `${p.slice(0, -1)}%${last.toString(16).toUpperCase()}${query}`;
    }
    case 'dot':
      return `${p.slice(0, slash + 1)}./${p.slice(slash + 1)}${query}`;
    case 'dotdot':
      return `/x/..${path}`;
    case 'queryOrder':
      return query === '' ? path : `${p}?${query.slice(1).split('&').reverse().join('&')}`;
  }
}

function directoryOf(path: string): string {
  const [p] = splitQuery(path);
  return p.slice(0, p.lastIndexOf('/') + 1);
}

/** A reference that cannot be mistaken for a scheme, a same-document query or an empty href. */
function safeRelative(ref: string): string {
  return ref === '' || ref.startsWith('?') || ref.startsWith('#') ? `./${ref}` : ref;
}

function relativeUp(dir: string, path: string): string {
  const depth = dir.split('/').length - 2;
  return safeRelative('../'.repeat(depth) + path.slice(1));
}

function relativeShortest(dir: string, path: string): string {
  return path.startsWith(dir) ? safeRelative(path.slice(dir.length)) : relativeUp(dir, path);
}

/** The directory relative links of a page resolve against (its `<base href>` if it has one). */
export function baseDirectory(spec: PageSpec): string {
  return spec.base?.dir ?? directoryOf(spec.path);
}

export function baseHref(spec: PageSpec, originOf: OriginOf): string | null {
  if (spec.base === null) return null;
  return spec.base.kind === 'absolute' ? `${originOf(spec.ref.host)}${spec.base.dir}` : spec.base.dir;
}

/** The href attribute as emitted, and rel where there is one. */
export function hrefOf(model: WebModel, spec: PageSpec, link: Link, originOf: OriginOf): string {
  switch (link.kind) {
    case 'mailto':
      return 'mailto:webmaster@example.invalid';
    case 'javascript':
      return 'javascript:void(0)';
    case 'tel':
      return 'tel:+15550100';
    case 'nofollow':
      return `/nofollow/${link.id}`;
    case 'variant':
      return variantPath(model, spec.ref.host, link.page, link.variant);
    case 'file':
      return filePath(link.page, link.index, link.file);
    case 'page':
      break;
  }
  const path = noisyPath(pagePath(model, link.target.host, link.target.page), link);
  const dir = baseDirectory(spec);
  switch (link.anchor) {
    case 'root':
      return path;
    case 'absolute':
      return `${originOf(link.target.host)}${path}`;
    case 'absoluteUpper':
      return `${originOf(link.target.host).replace(/^http:/, 'HTTP:')}${path}`;
    case 'relative':
      return relativeShortest(dir, path);
    case 'relativeDot':
      return `./${relativeShortest(dir, path)}`;
    case 'relativeUp':
      return relativeUp(dir, path);
  }
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

const VARIANT_ANCHORS: Record<VariantKind, string> = {
  print: 'Print this article',
  near: 'Archived copy',
  'session-path': 'Continue reading',
  'session-query': 'Continue reading',
};

export function anchorText(model: WebModel, link: Link, prose: boolean): string {
  switch (link.kind) {
    case 'page':
      return prose ? pageTitle(model.seed, link.target.host, link.target.page) : `host ${link.target.host} page ${link.target.page}`;
    case 'variant':
      return VARIANT_ANCHORS[link.variant];
    case 'file':
      return fileLabel(link.file, link.page, link.index);
    case 'nofollow':
      return 'sponsored';
    case 'mailto':
      return 'write to us';
    case 'javascript':
      return 'open menu';
    case 'tel':
      return 'call us';
  }
}

const WORDS = ['crawl', 'frontier', 'host', 'lease', 'queue', 'polite', 'delay', 'robots', 'seen', 'page', 'link',
  'anchor', 'fetch', 'parse', 'store', 'record', 'harvest', 'trawl', 'net', 'tide', 'shoal', 'catch', 'depth', 'breadth'];
const CORPUS_CHARS = 16_384;
const corpora = new Map<number, string>();

/** A seed-dependent block of words that pages take their padding from. */
function corpus(seed: number): string {
  let text = corpora.get(seed);
  if (text === undefined) {
    const random = mulberry32(hashInts(seed, 0x70ad));
    const words: string[] = [];
    let length = 0;
    while (length < CORPUS_CHARS) {
      const word = WORDS[pick(random, WORDS.length)] as string;
      words.push(word);
      length += word.length + 1;
    }
    text = words.join(' ');
    corpora.set(seed, text);
  }
  return text;
}

function padding(model: WebModel, host: number, page: number, chars: number, version: number): string {
  if (chars <= 0) return '';
  const text = corpus(model.seed);
  // Version 0 keeps the padding a static web always had; each later version starts elsewhere.
  let offset = (version === 0 ? hashInts(model.seed, host, page, 0x9ad) : hashInts(model.seed, host, page, 0x9ad, version)) % text.length;
  let out = '';
  while (out.length < chars) {
    out += text.slice(offset, offset + chars - out.length);
    offset = 0;
  }
  return out;
}

/** How page bodies are made beyond the link table: padding or prose, and which version. */
export interface RenderOptions {
  /** The page's version (see the changing web); default 0. */
  version?: number;
  /** Words of prose per page (title, dateline, paragraphs); null/undefined = the padding body of ~pageBytes. */
  proseWords?: number | null;
}

function linkItems(model: WebModel, spec: PageSpec, originOf: OriginOf, prose: boolean): string {
  return spec.links
    .map((link) => {
      const rel = link.kind === 'nofollow' ? ` rel="${link.rel}"` : '';
      return `<li><a href="${escapeHtml(hrefOf(model, spec, link, originOf))}"${rel}>${escapeHtml(anchorText(model, link, prose))}</a></li>`;
    })
    .join('\n');
}

function proseDocument(title: string, headExtra: string, nav: string, body: string): string {
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>${headExtra}</head>\n<body>\n` +
    `<header><h1>${escapeHtml(title)}</h1></header>\n<nav><ul>\n${nav}\n</ul></nav>\n${body}\n</body>\n</html>\n`
  );
}

/**
 * The HTML body of a page: its links (in link-table order) and padding up to ~pageBytes, or with
 * `proseWords` a titled article. A mirror renders its original's bytes.
 */
export function renderPage(model: WebModel, servedHost: number, page: number, originOf: OriginOf, pageBytes: number, options: RenderOptions = {}): string {
  const host = contentHost(model, servedHost);
  const spec = pageSpec(model, host, page);
  const base = baseHref(spec, originOf);
  const version = options.version ?? 0;
  const baseTag = base === null ? '' : `<base href="${escapeHtml(base)}">`;
  if (options.proseWords != null) {
    const text = article(model.seed, host, page, version, options.proseWords);
    return proseDocument(pageTitle(model.seed, host, page), baseTag, linkItems(model, spec, originOf, true), renderArticle(text));
  }
  const head =
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>testweb host ${host} page ${page}</title>` +
    baseTag +
    `</head>\n<body>\n<h1>Host ${host}, page ${page}</h1>\n<ul>\n${linkItems(model, spec, originOf, false)}\n</ul>\n<p>`;
  const tail = '</p>\n</body>\n</html>\n';
  return head + padding(model, host, page, pageBytes - head.length - tail.length, version) + tail;
}

/**
 * A page's duplicate variant (prose pages only). Session variants are the page's own bytes. The
 * near copy is the page with an edited article, and a `<base href>` naming the page's directory
 * so its relative links land where the page's do. The print view keeps the article and swaps
 * the chrome: no navigation, a link back to the page, a footer.
 */
export function renderVariant(model: WebModel, servedHost: number, page: number, variant: VariantKind, originOf: OriginOf, proseWords: number, version: number): string {
  const host = contentHost(model, servedHost);
  if (variant === 'session-path' || variant === 'session-query') return renderPage(model, host, page, originOf, 0, { version, proseWords });
  const spec = pageSpec(model, host, page);
  const title = pageTitle(model.seed, host, page);
  const text = article(model.seed, host, page, version, proseWords);
  if (variant === 'near') {
    const base = baseHref(spec, originOf) ?? baseDirectory(spec);
    return proseDocument(title, `<base href="${escapeHtml(base)}">`, linkItems(model, spec, originOf, true), renderArticle(nearCopy(text, model.seed, host, page)));
  }
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} (print version)</title></head>\n<body class="print">\n` +
    `<p class="print-note">Printer-friendly version. <a href="${escapeHtml(spec.path)}">Back to the article</a></p>\n<h1>${escapeHtml(title)}</h1>\n` +
    `${renderArticle(text)}\n<footer><p>Copyright Example Publishing. All rights reserved. Printed copies are for personal use only.</p></footer>\n</body>\n</html>\n`
  );
}

/** The target of a rel=nofollow link: a real page, so following it shows up in the log. */
export function renderNofollowPage(host: number, id: number): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>nofollow ${host}/${id}</title></head>\n` +
    `<body><p>Only reachable through rel=nofollow: a polite crawler never fetches this.</p></body></html>\n`;
}

export const NOT_FOUND_BODY = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>404</title></head><body><p>Not found</p></body></html>\n';
