/**
 * The link table: which pages exist and what each one links to, as a pure function of the
 * options and the seed. The server renders pages from it and groundTruth() walks it, so the two
 * can never disagree. Nothing is stored per page: a 100k-page web costs no memory until asked.
 */
import { TestWebError, TestWebErrorCode } from './errors.js';
import { hashInts, mulberry32, pick } from './prng.js';

export interface WebShape {
  hosts: number;
  pagesPerHost: number;
  linksPerPage: number;
  crossHostLinks: number;
  seed: number;
  /** Emit equivalent non-canonical forms of links, plus links a crawler must not follow. */
  noisyLinks: boolean;
  /** Serve every fifth page (ids 3, 8, 13, …) at `/q?a=<id>&b=<n>` instead of `/p/<id>`. */
  queryPages: boolean;
}
export type WebModel = Readonly<WebShape>;

export interface PageRef {
  host: number;
  page: number;
}

/** How a link reaches its target: from the root of its host, absolute, or relative to the base. */
export type LinkAnchor = 'root' | 'absolute' | 'absoluteUpper' | 'relative' | 'relativeDot' | 'relativeUp';
/** An equivalent rewrite of the target path a normalizer must undo. */
export type LinkNoise = 'none' | 'fragment' | 'utm' | 'fbclid' | 'gclid' | 'percent' | 'dot' | 'dotdot' | 'queryOrder';

export type Link =
  /** A followable link to a page of the web (on this host or another). */
  | { kind: 'page'; target: PageRef; anchor: LinkAnchor; noise: LinkNoise; token: number }
  /** rel=nofollow to `/nofollow/<id>` on the same host; nothing else links there. */
  | { kind: 'nofollow'; id: number; rel: 'nofollow' | 'noopener nofollow' }
  | { kind: 'mailto' }
  | { kind: 'javascript' }
  | { kind: 'tel' };

/** `<base href>`: a directory on the same host, root-relative or absolute. */
export interface BaseHref {
  kind: 'rootRelative' | 'absolute';
  dir: string;
}

export interface PageSpec {
  ref: PageRef;
  /** Canonical path (and query) of the page: its pageKey. */
  path: string;
  base: BaseHref | null;
  links: Link[];
}

export type Resource = { kind: 'page'; page: number } | { kind: 'nofollow'; id: number } | { kind: 'robots' };

// Independent random streams per page, so switching noise on or off keeps the same link graph.
const STREAM_TARGETS = 1;
const STREAM_FORMS = 2;
const STREAM_QUERY = 3;
const STREAM_BASE = 4;

const INTRA_ANCHORS: readonly LinkAnchor[] = ['root', 'root', 'root', 'absolute', 'absoluteUpper', 'relative', 'relativeDot', 'relativeUp'];
const CROSS_ANCHORS: readonly LinkAnchor[] = ['absolute', 'absolute', 'absoluteUpper'];
const NOISES: readonly LinkNoise[] = ['none', 'none', 'none', 'fragment', 'utm', 'fbclid', 'gclid', 'percent', 'dot', 'dotdot'];

function requireCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TestWebError(TestWebErrorCode.Options, `${name} must be an integer ≥ ${min}, got ${value}`);
  }
}

export function createWebModel(shape: WebShape): WebModel {
  requireCount('hosts', shape.hosts, 1);
  requireCount('pagesPerHost', shape.pagesPerHost, 1);
  requireCount('linksPerPage', shape.linksPerPage, 0);
  requireCount('crossHostLinks', shape.crossHostLinks, 0);
  if (!Number.isFinite(shape.seed)) {
    throw new TestWebError(TestWebErrorCode.Options, `seed must be a finite number, got ${shape.seed}`);
  }
  return Object.freeze({ ...shape, seed: Math.trunc(shape.seed) >>> 0 });
}

export function isQueryPage(model: WebModel, page: number): boolean {
  return model.queryPages && page % 5 === 3;
}

function queryValue(model: WebModel, host: number, page: number): number {
  return 10 + (hashInts(model.seed, host, page, STREAM_QUERY) % 90);
}

/** The canonical path (pageKey) of a page: `/` for page 0, `/p/<id>` or `/q?a=<id>&b=<n>`. */
export function pagePath(model: WebModel, host: number, page: number): string {
  if (page === 0) return '/';
  if (isQueryPage(model, page)) return `/q?a=${page}&b=${queryValue(model, host, page)}`;
  return `/p/${page}`;
}

function choose<T>(random: () => number, options: readonly T[]): T {
  return options[pick(random, options.length)] as T;
}

function pageLink(model: WebModel, forms: () => number, from: number, target: PageRef): Link {
  const token = pick(forms, 1_000_000);
  if (!model.noisyLinks) {
    return { kind: 'page', target, anchor: target.host === from ? 'root' : 'absolute', noise: 'none', token };
  }
  const anchor = choose(forms, target.host === from ? INTRA_ANCHORS : CROSS_ANCHORS);
  let noise = choose(forms, NOISES);
  if (isQueryPage(model, target.page) && forms() < 0.4) noise = 'queryOrder';
  // The root has no path character to escape.
  if (noise === 'percent' && target.page === 0) noise = 'dot';
  return { kind: 'page', target, anchor, noise, token };
}

/**
 * The one link table. Page p links to p + 1 (so every page is reachable from the root), then to
 * random pages of its host up to `linksPerPage` links; the root of host h links to the root of
 * host h + 1 (so one seed reaches every host), then to random pages of other hosts up to
 * `crossHostLinks` links. Noisy pages add mailto/javascript/tel links and a rel=nofollow link.
 */
export function pageSpec(model: WebModel, host: number, page: number): PageSpec {
  const targets = mulberry32(hashInts(model.seed, host, page, STREAM_TARGETS));
  const forms = mulberry32(hashInts(model.seed, host, page, STREAM_FORMS));
  const n = model.pagesPerHost;
  const links: Link[] = [];

  let intra = model.linksPerPage;
  if (page + 1 < n) {
    links.push(pageLink(model, forms, host, { host, page: page + 1 }));
    intra -= 1;
  }
  for (let i = 0; i < intra; i++) links.push(pageLink(model, forms, host, { host, page: pick(targets, n) }));

  if (model.hosts > 1) {
    let cross = model.crossHostLinks;
    if (page === 0 && cross > 0) {
      links.push(pageLink(model, forms, host, { host: (host + 1) % model.hosts, page: 0 }));
      cross -= 1;
    }
    for (let i = 0; i < cross; i++) {
      const other = (host + 1 + pick(targets, model.hosts - 1)) % model.hosts;
      links.push(pageLink(model, forms, host, { host: other, page: pick(targets, n) }));
    }
  }

  let base: BaseHref | null = null;
  if (model.noisyLinks) {
    if (forms() < 0.3) links.push({ kind: 'nofollow', id: page, rel: forms() < 0.5 ? 'nofollow' : 'noopener nofollow' });
    if (forms() < 0.3) links.push({ kind: 'mailto' });
    if (forms() < 0.3) links.push({ kind: 'javascript' });
    if (forms() < 0.2) links.push({ kind: 'tel' });
    const b = hashInts(model.seed, host, page, STREAM_BASE);
    if (page > 0 && b % 5 === 0) {
      base = b % 2 === 0 ? { kind: 'rootRelative', dir: '/b/c/' } : { kind: 'absolute', dir: '/d/' };
    }
  }
  return { ref: { host, page }, path: pagePath(model, host, page), base, links };
}

function parseId(text: string | undefined): number | null {
  return text !== undefined && /^(0|[1-9]\d{0,15})$/.test(text) ? Number(text) : null;
}

/** What a request key (see requestKey) names on a host, or null when nothing lives there. */
export function lookupResource(model: WebModel, host: number, key: string): Resource | null {
  if (key === '/robots.txt') return { kind: 'robots' };
  if (key === '/') return { kind: 'page', page: 0 };
  let match = /^\/p\/([^/?]+)$/.exec(key);
  if (match) {
    const page = parseId(match[1]);
    return page !== null && page > 0 && page < model.pagesPerHost && !isQueryPage(model, page) ? { kind: 'page', page } : null;
  }
  match = /^\/q\?a=([^&]+)&b=([^&]+)$/.exec(key);
  if (match) {
    const page = parseId(match[1]);
    if (page === null || page >= model.pagesPerHost || !isQueryPage(model, page)) return null;
    return parseId(match[2]) === queryValue(model, host, page) ? { kind: 'page', page } : null;
  }
  match = /^\/nofollow\/([^/?]+)$/.exec(key);
  if (match) {
    const id = parseId(match[1]);
    return id !== null && id < model.pagesPerHost ? { kind: 'nofollow', id } : null;
  }
  return null;
}

/**
 * Every page reachable from `seeds` by following the link table's followable links, restricted
 * to `hosts` (null = any host) and to pages `allow` accepts (a disallowed page is not fetched,
 * so its links are not discovered either). Breadth-first, in discovery order.
 */
export function reachablePages(
  model: WebModel,
  seeds: readonly PageRef[],
  hosts: ReadonlySet<number> | null,
  allow: (ref: PageRef) => boolean = () => true,
): PageRef[] {
  const n = model.pagesPerHost;
  const seen = new Uint8Array(model.hosts * n);
  const order: PageRef[] = [];
  const visit = (ref: PageRef): void => {
    const index = ref.host * n + ref.page;
    if (seen[index] === 1) return;
    seen[index] = 1;
    if ((hosts === null || hosts.has(ref.host)) && allow(ref)) order.push(ref);
  };
  for (const seed of seeds) visit(seed);
  for (let i = 0; i < order.length; i++) {
    const ref = order[i] as PageRef;
    for (const link of pageSpec(model, ref.host, ref.page).links) {
      if (link.kind === 'page') visit(link.target);
    }
  }
  return order;
}
