/**
 * A guard against pathologically deep markup.
 *
 * htmlparser2 keeps its open-element stack with `Array#unshift` and finds the element a close
 * tag ends with `Array#indexOf`, so parsing costs O(depth × tags): 200,000 unclosed `<div>`s
 * (1 MB) took 28 s here, and 1,000 of them followed by 2M stray `</x>` (8 MB) took 4.6 s, all of
 * it blocking the event loop. Browsers cap the depth (Blink at 512) and real pages stay far
 * below that. So before parsing we estimate the depth in one linear scan; a page above the cap
 * is not parsed as a tree, only the few tags we extract are lifted out of it (see
 * `flattenForExtraction`).
 */

/** Default cap on estimated element nesting (Blink's parser caps the DOM depth at 512). */
export const DEFAULT_MAX_NESTING_DEPTH = 512;

/** Elements htmlparser2 never pushes on its stack (Parser.js `voidElements`). */
const VOID_ELEMENTS = new Set([
  'area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'img', 'input',
  'isindex', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr',
]);

/** Raw-text elements: htmlparser2 reads their content as text up to the matching end tag. */
const RAW_TEXT_END: ReadonlyMap<string, RegExp> = new Map(
  ['script', 'style', 'textarea', 'title', 'xmp'].map((name) => [name, new RegExp(`</${name}`, 'ig')]),
);

/**
 * Elements that, left unclosed, are closed by the next one of the same name (`<p>a<p>b`,
 * `<li>`, table cells): counting them as nesting would flag ordinary sloppy pages.
 */
const CLOSED_BY_SIBLING = new Set(['p', 'li', 'dt', 'dd', 'option', 'tr', 'td', 'th', 'rt', 'rp']);

/**
 * Whether the open-element depth the parser would reach exceeds `maxDepth`. An estimate, in
 * one pass: a close tag ends the latest open element of its name (the parser may close more,
 * so the estimate errs high, never by more than the sibling-closed elements it skips).
 */
export function nestingExceeds(html: string, maxDepth: number): boolean {
  // Fewer than maxDepth tags fit: `<a>` is the shortest start tag.
  if (html.length <= maxDepth * 3) return false;
  const open = new Map<string, number>();
  let depth = 0;
  // A hand-rolled scan (indexOf and char codes): a regex over every tag cost ~10 % of a parse.
  for (let lt = html.indexOf('<'); lt !== -1; ) {
    let start = lt + 1;
    let code = html.charCodeAt(start);
    if (code === BANG && html.startsWith('!--', start)) {
      // Markup inside a comment is not markup; an unterminated comment runs to the end.
      const end = html.indexOf('-->', start + 3);
      if (end === -1) return false;
      lt = html.indexOf('<', end + 3);
      continue;
    }
    const closing = code === SLASH;
    if (closing) code = html.charCodeAt(++start);
    // htmlparser2 reads a tag name as a letter, then anything up to whitespace, `/` or `>`.
    if (!isAsciiLetter(code)) {
      lt = html.indexOf('<', start);
      continue;
    }
    let end = start + 1;
    while (end < html.length && !endsTagName(html.charCodeAt(end))) end++;
    const name = html.slice(start, end).toLowerCase();
    lt = html.indexOf('<', end);
    if (closing) {
      const count = open.get(name);
      if (count !== undefined && count > 0) {
        open.set(name, count - 1);
        depth--;
      }
      continue;
    }
    const rawTextEnd = RAW_TEXT_END.get(name);
    if (rawTextEnd !== undefined) {
      rawTextEnd.lastIndex = end;
      if (rawTextEnd.exec(html) === null) return false;
      lt = html.indexOf('<', rawTextEnd.lastIndex);
      continue;
    }
    if (VOID_ELEMENTS.has(name)) continue;
    const count = open.get(name) ?? 0;
    if (count > 0 && CLOSED_BY_SIBLING.has(name)) continue;
    open.set(name, count + 1);
    if (++depth > maxDepth) return true;
  }
  return false;
}

const BANG = 0x21;
const SLASH = 0x2f;

function isAsciiLetter(code: number): boolean {
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x7a;
}

function endsTagName(code: number): boolean {
  // whitespace (\t \n \f \r space), `/` or `>`
  return code === 0x20 || code === 0x2f || code === 0x3e || (code >= 0x09 && code <= 0x0d);
}

// `[^<>]*`, not `[^>]*`: a run of `<a ` without any `>` must not make each match attempt scan
// to the end of the input (quadratic).
const EXTRACTED_TAG = /<(a|area|base|link|meta)(?=[\s/>])[^<>]*>/gi;
const TITLE = /<title(?=[\s/>])[^<>]*>([^<]*)/i;

/**
 * The fallback for pages `nestingExceeds` flags: a flat document of just the tags parseHtml
 * reads, in document order, each `<a>` closed at once so nothing nests. Linear in the input.
 * Cruder than a parse (a tag inside a comment or script counts, a `<` or `>` inside a quoted
 * attribute spoils that tag), which is acceptable for pages no browser renders sensibly.
 */
export function flattenForExtraction(html: string): string {
  const parts: string[] = [];
  const title = TITLE.exec(html);
  if (title?.[1] !== undefined) parts.push(`<title>${title[1]}</title>`);
  for (const match of html.matchAll(EXTRACTED_TAG)) {
    parts.push(match[1]?.toLowerCase() === 'a' ? `${match[0]}</a>` : match[0]);
  }
  return parts.join('');
}
