/**
 * Whether a fetched page needs a browser to show what it links to: a pure look at the HTML the
 * crawler already has. It scans with regular expressions rather than a parser (this lib must not
 * pull in the parse lib's packages, and the signals are coarse): a wrong "no" costs the links a
 * script would have added, which the per-host learner (learner.ts) catches by sampling; a wrong
 * "yes" costs one render.
 */

export interface ClassifierSettings {
  /** Visible body text below this many characters, on a page with scripts, is a shell. */
  minTextChars: number;
  /** The few-links rule looks only at pages at least this large (bytes of HTML). */
  fewLinksMinBytes: number;
  /** …with fewer links than this per KiB of HTML… */
  fewLinksPerKib: number;
  /** …and at least this share of the HTML inside `<script>` elements. */
  fewLinksMinScriptShare: number;
  /**
   * Whether the renderer loads scripts from other hosts (TRAWL_RENDER_OTHER_HOSTS or
   * TRAWL_RENDER_ALLOW_HOSTS). Off, a page whose every script is on another host, with no inline
   * code that touches the page, has nothing that would run: rendering it cannot add a thing.
   */
  otherHostScripts: boolean;
}

export const DEFAULT_CLASSIFIER_SETTINGS: Readonly<ClassifierSettings> = Object.freeze({
  minTextChars: 200,
  fewLinksMinBytes: 20_000,
  fewLinksPerKib: 0.1,
  fewLinksMinScriptShare: 0.5,
  otherHostScripts: false,
});

/** What the decision was made from, for logs and the learner. */
export interface PageSignals {
  htmlBytes: number;
  /** Visible body text, whitespace collapsed. */
  textChars: number;
  /** `<a href>` / `<area href>` that lead somewhere (not `#…`, `javascript:`). */
  links: number;
  scripts: number;
  scriptBytes: number;
  /** Scripts with a `src`… */
  externalScripts: number;
  /** …of which on another host than the page's (a CDN's, an analytics tag). */
  otherHostScripts: number;
  /** Inline scripts that touch the page or the network (`document`, `fetch(`, jQuery, …). */
  activeInlineScripts: number;
  /** The id of an empty single-page-app mount point, or null. */
  emptyRoot: string | null;
  noscriptHint: boolean;
  scriptBuildsLinks: boolean;
}

export type RenderReason =
  | 'no-scripts'
  | 'inert-scripts'
  | 'hashbang-url'
  | 'empty-app-root'
  | 'near-empty-text'
  | 'noscript-hint'
  | 'script-builds-links'
  | 'few-links'
  | 'plain-html';

export interface RenderClassification {
  render: boolean;
  reason: RenderReason;
  signals: PageSignals;
}

const SCRIPT = /<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi;
const HIDDEN_BLOCKS = /<(script|style|noscript|template|svg)\b[^>]*>[\s\S]*?<\/\1\s*>/gi;
const CODE_BLOCKS = /<(script|style|template|svg)\b[^>]*>[\s\S]*?<\/\1\s*>/gi;
const COMMENT = /<!--[\s\S]*?-->/g;
const TAG = /<[^>]*>/g;
const LINK = /<(?:a|area)\b[^>]*?\shref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi;
const NOSCRIPT = /<noscript\b[^>]*>([\s\S]*?)<\/noscript\s*>/gi;
const JS_HINT = /\b(?:enable|activate|turn on|switch on|allow)\s+(?:your\s+)?javascript\b|\bjavascript\s+(?:is\s+)?(?:required|disabled|needed|must be enabled)\b|\b(?:requires|need|needs)\s+javascript\b/i;
/** The mount points of React (create-react-app, Vite), Vue, Next.js, Nuxt, Gatsby, Angular's habit. */
const EMPTY_ROOT = /<div\b[^>]*?\sid\s*=\s*["']?(root|app|__next|__nuxt|___gatsby|main-app)["']?[^>]*>\s*(?:<!--[\s\S]*?-->\s*)*<\/div\s*>/i;
const BODY = /<body\b[^>]*>([\s\S]*)$/i;
/** An inline script that writes markup or elements, and mentions links: it builds part of the page. */
const DOM_WRITE = /\.innerHTML\s*[+]?=|insertAdjacentHTML|\.outerHTML\s*=|document\.write|createElement\(\s*["']a["']\s*\)/;
const LINK_MENTION = /href|<a[\s>]/i;
/** Inline code that could change the page: it reaches the document, the network or a library. */
const ACTIVE_CODE = /\bdocument\b|\binnerHTML\b|\bappendChild\b|\binsertBefore\b|\bfetch\s*\(|\bXMLHttpRequest\b|\bimport\s*\(|\$\s*\(|\bjQuery\b|\blocation\b/;
const SRC = /\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i;

/** Whether `src` (as written on a page at `pageUrl`) is on another host; an unreadable one counts as the page's own. */
function onOtherHost(src: string, pageUrl: URL | null): boolean {
  if (pageUrl === null) return false;
  try {
    return new URL(src, pageUrl).host !== pageUrl.host;
  } catch {
    return false;
  }
}

export function pageSignals(html: string, url?: string): PageSignals {
  let scripts = 0;
  let scriptBytes = 0;
  let externalScripts = 0;
  let otherHostScripts = 0;
  let activeInlineScripts = 0;
  let scriptBuildsLinks = false;
  let pageUrl: URL | null = null;
  try {
    pageUrl = url === undefined ? null : new URL(url);
  } catch {
    pageUrl = null;
  }
  for (const match of html.matchAll(SCRIPT)) {
    const attributes = match[1] ?? '';
    const code = match[2] ?? '';
    // JSON islands and templates are data, not code.
    const type = /\btype\s*=\s*["']?([^"'\s>]+)/i.exec(attributes)?.[1]?.toLowerCase();
    if (type !== undefined && !/^(?:module|(?:text|application)\/(?:javascript|ecmascript)|text\/babel)$/.test(type)) continue;
    scripts++;
    scriptBytes += match[0].length;
    const src = SRC.exec(attributes);
    if (src !== null) {
      externalScripts++;
      if (onOtherHost((src[1] ?? src[2] ?? src[3] ?? '').trim(), pageUrl)) otherHostScripts++;
    } else if (ACTIVE_CODE.test(code)) activeInlineScripts++;
    if (!scriptBuildsLinks && DOM_WRITE.test(code) && LINK_MENTION.test(code)) scriptBuildsLinks = true;
  }
  const body = BODY.exec(html)?.[1] ?? html;
  const text = body.replace(COMMENT, ' ').replace(HIDDEN_BLOCKS, ' ').replace(TAG, ' ').replace(/\s+/g, ' ').trim();
  let links = 0;
  for (const match of body.replace(COMMENT, ' ').replace(CODE_BLOCKS, ' ').matchAll(LINK)) {
    const href = (match[1] ?? match[2] ?? match[3] ?? '').trim();
    if (href === '' || href.startsWith('#') || /^javascript:/i.test(href)) continue;
    links++;
  }
  let noscriptHint = false;
  for (const match of html.matchAll(NOSCRIPT)) if (JS_HINT.test((match[1] ?? '').replace(TAG, ' '))) noscriptHint = true;
  return {
    htmlBytes: Buffer.byteLength(html),
    textChars: text.length,
    links,
    scripts,
    scriptBytes,
    externalScripts,
    otherHostScripts,
    activeInlineScripts,
    emptyRoot: EMPTY_ROOT.exec(body)?.[1] ?? null,
    noscriptHint,
    scriptBuildsLinks,
  };
}

/**
 * The rules, strongest first. A page without scripts never needs a browser (trawl renders for
 * what scripts add, not for CSS), nor does one whose scripts would not run: every external one on
 * another host the renderer does not load from (`otherHostScripts` off), and no inline code that
 * touches the page or the network; then a hash-bang URL, an empty app root, a near-empty body, a
 * `<noscript>` asking for JavaScript, an inline script that writes links, and a large page that
 * is mostly script with almost no links.
 */
export function needsRendering(html: string, url: string, settings: ClassifierSettings = DEFAULT_CLASSIFIER_SETTINGS): RenderClassification {
  const signals = pageSignals(html, url);
  const decide = (render: boolean, reason: RenderReason): RenderClassification => ({ render, reason, signals });
  if (signals.scripts === 0) return decide(false, 'no-scripts');
  const runnable = signals.activeInlineScripts + signals.externalScripts - (settings.otherHostScripts ? 0 : signals.otherHostScripts);
  if (runnable === 0) return decide(false, 'inert-scripts');
  if (url.includes('#!')) return decide(true, 'hashbang-url');
  if (signals.emptyRoot !== null) return decide(true, 'empty-app-root');
  if (signals.textChars < settings.minTextChars) return decide(true, 'near-empty-text');
  if (signals.noscriptHint) return decide(true, 'noscript-hint');
  if (signals.scriptBuildsLinks) return decide(true, 'script-builds-links');
  const fewLinks =
    signals.htmlBytes >= settings.fewLinksMinBytes &&
    signals.links < (signals.htmlBytes / 1024) * settings.fewLinksPerKib &&
    signals.scriptBytes >= signals.htmlBytes * settings.fewLinksMinScriptShare;
  if (fewLinks) return decide(true, 'few-links');
  return decide(false, 'plain-html');
}
