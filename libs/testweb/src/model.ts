/**
 * The link table: which pages exist and what each one links to, as a pure function of the
 * options and the seed. The server renders pages from it and groundTruth() walks it, so the two
 * can never disagree. Nothing is stored per page: a 100k-page web costs no memory until asked.
 */
import { TestWebError, TestWebErrorCode } from './errors.js';
import type { FileKind } from './files.js';
import { FILE_KINDS, fileDirectory, FILE_TYPES } from './files.js';
import { hashInts, mulberry32, pick } from './prng.js';
import { pageLinkCount } from './profile.js';

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
  /** Page counts of particular hosts (host index → pages) instead of pagesPerHost: a surge host. */
  pagesPerHostOverride?: Readonly<Record<number, number>>;
  /** Hosts mirrored byte for byte: mirror j is host `mirrorBase + j` and serves host `mirrors[j]`'s paths. */
  mirrors?: readonly number[];
  /** Host index of the first mirror; default `hosts`. */
  mirrorBase?: number;
  /** Duplicate variants (print view, near copy, session-id URLs) linked from some pages. */
  variants?: VariantShape | null;
  /** Links to binary files (PDF, images, archives, …) from some pages. */
  files?: FileShape | null;
  /** Realistic pages: a drawn number of links per page, with navigation and footer links (see profile.ts). */
  layout?: LinkLayout | null;
}
export type WebModel = Readonly<WebShape>;

/**
 * A page's duplicate, served at its own URL: `near` an archived copy whose text differs by a few
 * words, `print` the same article in other chrome, `session-path`/`session-query` the
 * byte-identical page behind a session id (`;jsessionid=…`, `?sid=…`).
 */
export const VARIANT_KINDS = ['near', 'print', 'session-path', 'session-query'] as const;
export type VariantKind = (typeof VARIANT_KINDS)[number];

export interface VariantShape {
  /** Hosts whose pages get variants; null = every link-table host. */
  hosts: readonly number[] | null;
  /** Share of pages (the root aside) with a variant, 0..1. */
  share: number;
  kinds: readonly VariantKind[];
}

export interface FileShape {
  /** Hosts whose pages link files; null = every link-table host. */
  hosts: readonly number[] | null;
  /** Mean file links per page; the fraction is drawn per page. */
  perPage: number;
  kinds: readonly FileKind[];
}

/**
 * How many links a page carries when pages look real: `links` page links in all (drawn per page
 * in [min, max]), of which `navLinks` and `footerLinks` are the host's navigation and footer (the
 * same targets on every page of the host) and `crossHostLinks` go to other hosts; the rest are
 * in-body links to pages of the host. `linksPerPage` is then unused.
 */
export interface LinkLayout {
  links: { min: number; max: number };
  navLinks: number;
  footerLinks: number;
  /** With `noisyLinks`, the share of body and cross-host links written in a non-canonical form (the tiny pages: 7 in 10). */
  noisyShare: number;
}

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
  | { kind: 'page'; target: PageRef; anchor: LinkAnchor; noise: LinkNoise; token: number; region?: LinkRegion }
  /** rel=nofollow to `/nofollow/<id>` on the same host; nothing else links there. */
  | { kind: 'nofollow'; id: number; rel: 'nofollow' | 'noopener nofollow' }
  | { kind: 'mailto' }
  | { kind: 'javascript' }
  | { kind: 'tel' }
  /** The page's own duplicate variant (root-relative). */
  | { kind: 'variant'; page: number; variant: VariantKind }
  /** A binary file (root-relative): `/<dir>/<page>-<index>.<ext>`. */
  | { kind: 'file'; page: number; index: number; file: FileKind };

/** Where a realistic page puts a link: its navigation block or its footer (in-body links have none). */
export type LinkRegion = 'nav' | 'footer';

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

export type Resource =
  | { kind: 'page'; page: number }
  | { kind: 'nofollow'; id: number }
  | { kind: 'robots' }
  | { kind: 'variant'; page: number; variant: VariantKind }
  | { kind: 'file'; page: number; index: number; file: FileKind };

// Independent random streams per page, so switching noise on or off keeps the same link graph.
const STREAM_TARGETS = 1;
const STREAM_FORMS = 2;
const STREAM_QUERY = 3;
const STREAM_BASE = 4;
const STREAM_VARIANT = 5;
const STREAM_SESSION = 6;
const STREAM_FILES = 7;
const STREAM_CHROME = 8;

const INTRA_ANCHORS: readonly LinkAnchor[] = ['root', 'root', 'root', 'absolute', 'absoluteUpper', 'relative', 'relativeDot', 'relativeUp'];
const CROSS_ANCHORS: readonly LinkAnchor[] = ['absolute', 'absolute', 'absoluteUpper'];
const NOISES: readonly LinkNoise[] = ['none', 'none', 'none', 'fragment', 'utm', 'fbclid', 'gclid', 'percent', 'dot', 'dotdot'];
const REWRITES: readonly LinkNoise[] = NOISES.filter((noise) => noise !== 'none');

function requireCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TestWebError(TestWebErrorCode.Options, `${name} must be an integer ≥ ${min}, got ${value}`);
  }
}

function requireHosts(name: string, hosts: readonly number[] | null | undefined, count: number): void {
  for (const host of hosts ?? []) {
    if (!(Number.isSafeInteger(host) && host >= 0 && host < count)) {
      throw new TestWebError(TestWebErrorCode.Options, `${name}: ${host} is not a link-table host (0..${count - 1})`);
    }
  }
}

function requireRange(name: string, value: number, min: number, max: number): void {
  if (!(value >= min && value <= max)) throw new TestWebError(TestWebErrorCode.Options, `${name} must be in ${min}..${max}, got ${value}`);
}

function requireKinds<T extends string>(name: string, kinds: readonly T[], known: readonly T[]): void {
  if (kinds.length === 0 || kinds.some((kind) => !known.includes(kind))) {
    throw new TestWebError(TestWebErrorCode.Options, `${name} must be some of ${known.join(', ')}, got ${JSON.stringify(kinds)}`);
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
  const override = shape.pagesPerHostOverride ?? {};
  requireHosts('pagesPerHostOverride', Object.keys(override).map(Number), shape.hosts);
  for (const [host, pages] of Object.entries(override)) requireCount(`pagesPerHostOverride[${host}]`, pages, 1);
  requireHosts('mirrors', shape.mirrors, shape.hosts);
  const mirrorBase = shape.mirrorBase ?? shape.hosts;
  requireCount('mirrorBase', mirrorBase, shape.hosts);
  if (shape.variants) {
    requireHosts('duplicates.hosts', shape.variants.hosts, shape.hosts);
    requireRange('duplicates.share', shape.variants.share, 0, 1);
    requireKinds('duplicates.kinds', shape.variants.kinds, VARIANT_KINDS);
  }
  if (shape.files) {
    requireHosts('fileLinks.hosts', shape.files.hosts, shape.hosts);
    requireRange('fileLinks.perPage', shape.files.perPage, 0, 100);
    requireKinds('fileLinks.kinds', shape.files.kinds, FILE_KINDS);
  }
  if (shape.layout) {
    const { links, navLinks, footerLinks } = shape.layout;
    requireCount('layout.links.min', links.min, navLinks + footerLinks + shape.crossHostLinks + 1);
    requireCount('layout.links.max', links.max, links.min);
    requireRange('layout.noisyShare', shape.layout.noisyShare, 0, 1);
  }
  return Object.freeze({ ...shape, mirrorBase, seed: Math.trunc(shape.seed) >>> 0 });
}

/** The link-table host whose content a host serves: a mirror's original, else the host itself. */
export function contentHost(model: WebModel, host: number): number {
  const j = host - (model.mirrorBase ?? model.hosts);
  return host >= model.hosts && model.mirrors !== undefined && j >= 0 && j < model.mirrors.length ? (model.mirrors[j] as number) : host;
}

/** Whether a host serves pages: a link-table host or a mirror. */
export function servesPages(model: WebModel, host: number): boolean {
  return (host >= 0 && host < model.hosts) || contentHost(model, host) !== host;
}

/** Link-table hosts, then mirror hosts: every host that serves pages. */
export function pageHosts(model: WebModel): number[] {
  const base = model.mirrorBase ?? model.hosts;
  return [...Array.from({ length: model.hosts }, (_, h) => h), ...(model.mirrors ?? []).map((_, j) => base + j)];
}

/** Pages of a host (its override, or pagesPerHost; a mirror has its original's); 0 for hosts without pages. */
export function pagesOf(model: WebModel, host: number): number {
  if (host >= 0 && host < model.hosts && model.pagesPerHostOverride === undefined) return model.pagesPerHost;
  if (!servesPages(model, host)) return 0;
  return model.pagesPerHostOverride?.[contentHost(model, host)] ?? model.pagesPerHost;
}

/** Pages of every page-serving host, mirrors included. */
export function totalPages(model: WebModel): number {
  return pageHosts(model).reduce((sum, host) => sum + pagesOf(model, host), 0);
}

const listed = (hosts: readonly number[] | null, host: number): boolean => hosts === null || hosts.includes(host);

/** The duplicate variant of a page (on its content host), or null. The root never has one. */
export function variantOf(model: WebModel, host: number, page: number): VariantKind | null {
  const shape = model.variants;
  if (!shape || page === 0) return null;
  const h = contentHost(model, host);
  if (!listed(shape.hosts, h)) return null;
  const draw = hashInts(model.seed, h, page, STREAM_VARIANT);
  if (draw / 4294967296 >= shape.share) return null;
  return shape.kinds[hashInts(draw, 1) % shape.kinds.length] as VariantKind;
}

/** The session id a page's session variant carries: 32 upper-case hex digits, as Java servlets write them. */
export function sessionId(model: WebModel, host: number, page: number): string {
  const h = contentHost(model, host);
  return [1, 2, 3, 4].map((i) => hashInts(model.seed, h, page, STREAM_SESSION, i).toString(16).padStart(8, '0')).join('').toUpperCase();
}

/** The path (and query) of a page's variant. Session ids ride in a path parameter or in `sid`, a name no common strip list has. */
export function variantPath(model: WebModel, host: number, page: number, variant: VariantKind): string {
  switch (variant) {
    case 'print':
      return `/print/p/${page}`;
    case 'near':
      return `/archive/p/${page}`;
    case 'session-path': {
      const path = pagePath(model, host, page);
      const q = path.indexOf('?');
      const sid = `;jsessionid=${sessionId(model, host, page)}`;
      return q === -1 ? `${path}${sid}` : `${path.slice(0, q)}${sid}${path.slice(q)}`;
    }
    case 'session-query': {
      const path = pagePath(model, host, page);
      return `${path}${path.includes('?') ? '&' : '?'}sid=${sessionId(model, host, page).toLowerCase()}`;
    }
  }
}

/** The files a page links: `/<dir>/<page>-<index>.<ext>`, kinds and count drawn per page. */
export function fileLinksOf(model: WebModel, host: number, page: number): { index: number; file: FileKind }[] {
  const shape = model.files;
  if (!shape) return [];
  const h = contentHost(model, host);
  if (!listed(shape.hosts, h)) return [];
  const whole = Math.floor(shape.perPage);
  const count = whole + (hashInts(model.seed, h, page, STREAM_FILES) / 4294967296 < shape.perPage - whole ? 1 : 0);
  return Array.from({ length: count }, (_, index) => ({
    index,
    file: shape.kinds[hashInts(model.seed, h, page, STREAM_FILES, index + 1) % shape.kinds.length] as FileKind,
  }));
}

export function filePath(page: number, index: number, file: FileKind): string {
  return `/${fileDirectory(file)}/${page}-${index}.${FILE_TYPES[file].extension}`;
}

export function isQueryPage(model: WebModel, page: number): boolean {
  return model.queryPages && page % 5 === 3;
}

function queryValue(model: WebModel, host: number, page: number): number {
  return 10 + (hashInts(model.seed, contentHost(model, host), page, STREAM_QUERY) % 90);
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

function pageLink(model: WebModel, forms: () => number, from: number, target: PageRef): Extract<Link, { kind: 'page' }> {
  const token = pick(forms, 1_000_000);
  if (!model.noisyLinks) {
    return { kind: 'page', target, anchor: target.host === from ? 'root' : 'absolute', noise: 'none', token };
  }
  const anchor = choose(forms, target.host === from ? INTRA_ANCHORS : CROSS_ANCHORS);
  // Realistic pages write most links canonically: only a share of them in a rewritten form.
  const share = model.layout?.noisyShare;
  let noise = share === undefined ? choose(forms, NOISES) : forms() < share ? choose(forms, REWRITES) : 'none';
  if (isQueryPage(model, target.page) && forms() < 0.4) noise = 'queryOrder';
  // The root has no path character to escape.
  if (noise === 'percent' && target.page === 0) noise = 'dot';
  return { kind: 'page', target, anchor, noise, token };
}

/** A navigation or footer link: a site template writes them canonical and root-relative, on every page alike. */
function chromeLink(forms: () => number, host: number, page: number, region: LinkRegion): Extract<Link, { kind: 'page' }> {
  return { kind: 'page', target: { host, page }, anchor: 'root', noise: 'none', token: pick(forms, 1_000_000), region };
}

/**
 * The one link table. Page p links to p + 1 (so every page is reachable from the root), then to
 * random pages of its host up to `linksPerPage` links; the root of host h links to the root of
 * host h + 1 (so one seed reaches every host), then to random pages of other hosts up to
 * `crossHostLinks` links. Noisy pages add mailto/javascript/tel links and a rel=nofollow link.
 */
export function pageSpec(model: WebModel, servedHost: number, page: number): PageSpec {
  // A mirror serves its original's bytes: the spec is the original's.
  const host = contentHost(model, servedHost);
  const targets = mulberry32(hashInts(model.seed, host, page, STREAM_TARGETS));
  const forms = mulberry32(hashInts(model.seed, host, page, STREAM_FORMS));
  const n = pagesOf(model, host);
  const links: Link[] = [];
  const layout = model.layout ?? null;
  const cross = model.hosts > 1 ? model.crossHostLinks : 0;

  let intra = model.linksPerPage;
  if (layout !== null) {
    // The navigation: the root, then the same few pages of the host on every page.
    for (let i = 0; i < layout.navLinks; i++) {
      const target = i === 0 ? 0 : hashInts(model.seed, host, STREAM_CHROME, i) % n;
      links.push(chromeLink(forms, host, target, 'nav'));
    }
    intra = pageLinkCount(layout, model.seed, host, page) - layout.navLinks - layout.footerLinks - cross;
  }
  if (page + 1 < n) {
    links.push(pageLink(model, forms, host, { host, page: page + 1 }));
    intra -= 1;
  }
  for (let i = 0; i < intra; i++) links.push(pageLink(model, forms, host, { host, page: pick(targets, n) }));

  if (model.hosts > 1) {
    let remaining = cross;
    if (page === 0 && remaining > 0) {
      links.push(pageLink(model, forms, host, { host: (host + 1) % model.hosts, page: 0 }));
      remaining -= 1;
    }
    for (let i = 0; i < remaining; i++) {
      const other = (host + 1 + pick(targets, model.hosts - 1)) % model.hosts;
      links.push(pageLink(model, forms, host, { host: other, page: pick(targets, pagesOf(model, other)) }));
    }
  }
  if (layout !== null) {
    for (let i = 0; i < layout.footerLinks; i++) {
      const target = hashInts(model.seed, host, STREAM_CHROME, 1000 + i) % n;
      links.push(chromeLink(forms, host, target, 'footer'));
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
  const variant = variantOf(model, host, page);
  if (variant !== null) links.push({ kind: 'variant', page, variant });
  for (const { index, file } of fileLinksOf(model, host, page)) links.push({ kind: 'file', page, index, file });
  return { ref: { host, page }, path: pagePath(model, host, page), base, links };
}

/**
 * The host a link of a page lands on when the page is served by `servedHost`. A mirror serves its
 * original's bytes, so absolute links (and every link under an absolute `<base href>`) still
 * name the original's origin; root-relative and relative ones stay on the mirror.
 */
export function linkHost(model: WebModel, spec: PageSpec, link: Link, servedHost: number): number {
  const target = link.kind === 'page' ? link.target.host : spec.ref.host;
  if (target !== spec.ref.host || servedHost === spec.ref.host || spec.base?.kind === 'absolute') return target;
  if (link.kind === 'page' && (link.anchor === 'absolute' || link.anchor === 'absoluteUpper')) return target;
  return servedHost;
}

function parseId(text: string | undefined): number | null {
  return text !== undefined && /^(0|[1-9]\d{0,15})$/.test(text) ? Number(text) : null;
}

/** The page a canonical page key names, or null. */
function lookupPage(model: WebModel, host: number, key: string): number | null {
  const n = pagesOf(model, host);
  if (key === '/') return n > 0 ? 0 : null;
  let match = /^\/p\/([^/?;]+)$/.exec(key);
  if (match) {
    const page = parseId(match[1]);
    return page !== null && page > 0 && page < n && !isQueryPage(model, page) ? page : null;
  }
  match = /^\/q\?a=([^&]+)&b=([^&]+)$/.exec(key);
  if (match) {
    const page = parseId(match[1]);
    if (page === null || page >= n || !isQueryPage(model, page)) return null;
    return parseId(match[2]) === queryValue(model, host, page) ? page : null;
  }
  return null;
}

/** A variant key (`/print/p/3`, `/p/3;jsessionid=…`, `/p/3?sid=…`) whose page really has that variant. */
function lookupVariant(model: WebModel, host: number, key: string): Resource | null {
  const candidates: { page: number | null; variant: VariantKind }[] = [];
  let match = /^\/(print|archive)\/p\/([^/?;]+)$/.exec(key);
  if (match) candidates.push({ page: parseId(match[2]), variant: match[1] === 'print' ? 'print' : 'near' });
  match = /^([^;?]*);jsessionid=[0-9A-F]+(\?.*)?$/.exec(key);
  if (match) candidates.push({ page: lookupPage(model, host, `${match[1]}${match[2] ?? ''}`), variant: 'session-path' });
  match = /^([^?]*)\?(.*)$/.exec(key);
  if (match) {
    const params = (match[2] as string).split('&');
    const rest = params.filter((param) => !param.startsWith('sid='));
    if (rest.length === params.length - 1) {
      candidates.push({ page: lookupPage(model, host, rest.length === 0 ? (match[1] as string) : `${match[1]}?${rest.join('&')}`), variant: 'session-query' });
    }
  }
  for (const { page, variant } of candidates) {
    if (page !== null && page < pagesOf(model, host) && variantOf(model, host, page) === variant && variantPath(model, host, page, variant) === key) {
      return { kind: 'variant', page, variant };
    }
  }
  return null;
}

function lookupFile(model: WebModel, host: number, key: string): Resource | null {
  const match = /^\/([a-z]+)\/(0|[1-9]\d{0,15})-(0|[1-9]\d{0,3})\.([a-z0-9]+)$/.exec(key);
  if (!match) return null;
  const page = Number(match[2]);
  const index = Number(match[3]);
  if (page >= pagesOf(model, host)) return null;
  const link = fileLinksOf(model, host, page)[index];
  return link !== undefined && filePath(page, index, link.file) === key ? { kind: 'file', page, index, file: link.file } : null;
}

/** What a request key (see requestKey) names on a host, or null when nothing lives there. */
export function lookupResource(model: WebModel, host: number, key: string): Resource | null {
  if (key === '/robots.txt') return { kind: 'robots' };
  if (!servesPages(model, host)) return null;
  const page = lookupPage(model, host, key);
  if (page !== null) return { kind: 'page', page };
  const match = /^\/nofollow\/([^/?]+)$/.exec(key);
  if (match) {
    const id = parseId(match[1]);
    return id !== null && id < pagesOf(model, host) ? { kind: 'nofollow', id } : null;
  }
  if (model.variants) {
    const variant = lookupVariant(model, host, key);
    if (variant !== null) return variant;
  }
  return model.files ? lookupFile(model, host, key) : null;
}

/** Something a walk of the web reaches: a page, a page's duplicate variant, or a linked file, on the host it lands on. */
export type WalkItem =
  | { kind: 'page'; host: number; page: number }
  | { kind: 'variant'; host: number; page: number; variant: VariantKind }
  | { kind: 'file'; host: number; page: number; index: number; file: FileKind };

/**
 * Everything reachable from `seeds` by following the link table's followable links (variants
 * and files included, as leaves: a print view's only link goes back to its page), restricted to
 * `hosts` (null = any host) and to items `allow` accepts (a disallowed page is not fetched, so
 * its links are not discovered either). Breadth-first, in discovery order.
 */
export function walkWeb(
  model: WebModel,
  seeds: readonly PageRef[],
  hosts: ReadonlySet<number> | null,
  allow: (item: WalkItem) => boolean = () => true,
): WalkItem[] {
  // One seen bit per page of every page-serving host (mirrors included), hosts laid end to end.
  const slots = new Map<number, { offset: number; pages: number }>();
  let size = 0;
  for (const host of pageHosts(model)) {
    const pages = pagesOf(model, host);
    slots.set(host, { offset: size, pages });
    size += pages;
  }
  const seen = new Uint8Array(size);
  const seenLeaves = new Set<string>();
  const items: WalkItem[] = [];
  const pages: Extract<WalkItem, { kind: 'page' }>[] = [];
  const inScope = (host: number): boolean => hosts === null || hosts.has(host);
  const visit = (host: number, page: number): void => {
    const slot = slots.get(host);
    if (slot === undefined || page >= slot.pages) return;
    if (seen[slot.offset + page] === 1) return;
    seen[slot.offset + page] = 1;
    const item = { kind: 'page', host, page } as const;
    if (inScope(host) && allow(item)) {
      items.push(item);
      pages.push(item);
    }
  };
  const leaf = (item: WalkItem, id: string): boolean => {
    if (seenLeaves.has(id)) return false;
    seenLeaves.add(id);
    if (!inScope(item.host) || !allow(item)) return false;
    items.push(item);
    return true;
  };
  for (const seed of seeds) visit(seed.host, seed.page);
  for (let i = 0; i < pages.length; i++) {
    const ref = pages[i] as PageRef;
    const spec = pageSpec(model, ref.host, ref.page);
    for (const link of spec.links) {
      if (link.kind === 'page') {
        visit(ref.host === spec.ref.host ? link.target.host : linkHost(model, spec, link, ref.host), link.target.page);
        continue;
      }
      const host = linkHost(model, spec, link, ref.host);
      if (link.kind === 'variant') {
        const reached = leaf({ kind: 'variant', host, page: link.page, variant: link.variant }, `v${host}:${link.page}`);
        if (reached && link.variant === 'print') visit(host, link.page);
      } else if (link.kind === 'file') {
        leaf({ kind: 'file', host, page: link.page, index: link.index, file: link.file }, `f${host}:${link.page}:${link.index}`);
      }
    }
  }
  return items;
}

/** The pages walkWeb reaches (pages only, `allow` judging pages). */
export function reachablePages(
  model: WebModel,
  seeds: readonly PageRef[],
  hosts: ReadonlySet<number> | null,
  allow: (ref: PageRef) => boolean = () => true,
): PageRef[] {
  const refs: PageRef[] = [];
  for (const item of walkWeb(model, seeds, hosts, (item) => item.kind !== 'page' || allow(item))) {
    if (item.kind === 'page') refs.push({ host: item.host, page: item.page });
  }
  return refs;
}
