import type { ChildNode, Element, ParentNode } from 'domhandler';
import { isBoilerplate } from './read-html.js';

/**
 * Where a page's main content is, for toMarkdown (markdown.ts): the one article, the main, or
 * the block the density of its paragraphs points at; and what inside it is furniture.
 */

export const isElement = (node: ChildNode): node is Element => node.type === 'tag' || node.type === 'script' || node.type === 'style';

/** Where paragraphs of main text live: the units the density choice scores (as Readability does). */
const SCORED = new Set(['p', 'pre', 'td', 'blockquote', 'li', 'dd']);
const ASCII_WHITESPACE = /[\t\n\f\r ]+/g;
/**
 * Whole class or id names that mark furniture beyond extractText's rules (which match words
 * inside names and so cannot take `header`: `entry-header` holds a post's title): site headers
 * and footers built of divs, and MediaWiki's edit links, navigation boxes and category links.
 */
const FURNITURE_NAMES = new Set([
  'header', 'footer', 'masthead', 'colophon', 'site-header', 'site-footer', 'global-header', 'global-footer', 'topbar',
  'mw-editsection', 'editsection', 'navbox', 'catlinks', 'headerlink',
]);

/** Furniture: extractText's boilerplate, and the names above. */
export function isFurniture(el: Element, insideArticle: boolean): boolean {
  if (isBoilerplate(el.name, el.attribs, insideArticle)) return true;
  const names = `${el.attribs['class'] ?? ''} ${el.attribs['id'] ?? ''}`.trim();
  if (names === '') return false;
  for (const name of names.toLowerCase().split(ASCII_WHITESPACE)) if (FURNITURE_NAMES.has(name)) return true;
  return false;
}

export function* elements(node: ParentNode): Generator<Element> {
  for (const child of node.children) {
    if (!isElement(child)) continue;
    yield child;
    yield* elements(child);
  }
}

export function baseUrl(document: ParentNode, url: string): URL | null {
  let page: URL | null = null;
  try {
    page = new URL(url);
  } catch {
    page = null;
  }
  for (const el of elements(document)) {
    if (el.name !== 'base' || el.attribs['href'] === undefined) continue;
    try {
      return new URL(el.attribs['href'].trim(), page ?? undefined);
    } catch {
      return page;
    }
  }
  return page;
}

/** Whether `el` or an ancestor is furniture (the site's header, navigation, a sidebar…). */
function inFurniture(el: Element): boolean {
  for (let node: ParentNode | null = el; node !== null && node.type === 'tag'; node = node.parent) {
    const element = node as Element;
    if (isFurniture(element, false)) return true;
  }
  return false;
}

/**
 * The root of the main content: the page's one `<article>`, else its `<main>` (or
 * `role="main"`), else the element the density of its paragraphs points at (Readability's
 * scoring, simplified), widened while it holds most of its parent's text; else `<body>`.
 */
export function mainRoot(document: ParentNode): { root: ParentNode; insideArticle: boolean } {
  const articles: Element[] = [];
  let main: Element | null = null;
  let body: Element | null = null;
  for (const el of elements(document)) {
    if (el.name === 'article' && !inFurniture(el)) articles.push(el);
    else if (main === null && (el.name === 'main' || el.attribs['role']?.trim().toLowerCase() === 'main')) main = el;
    else if (body === null && el.name === 'body') body = el;
  }
  // Articles inside another article (comments, embedded posts) do not make a listing.
  const outer = articles.filter((a) => !articles.some((b) => b !== a && contains(b, a)));
  if (outer.length === 1) return { root: outer[0] as Element, insideArticle: true };
  if (main !== null) return { root: main, insideArticle: true };
  const chosen = densest(body ?? document);
  return chosen === null ? { root: body ?? document, insideArticle: false } : { root: chosen, insideArticle: true };
}

function contains(ancestor: Element, node: Element): boolean {
  for (let p: ParentNode | null = node.parent; p !== null; p = p.parent) if (p === ancestor) return true;
  return false;
}

interface TextLength {
  all: number;
  /** Of which inside links. */
  links: number;
}

/**
 * Text measures of the subtrees the density choice looks at, each computed once per page (the
 * choice asks for the same subtrees again and again while it scores and widens).
 */
class Measures {
  private readonly lengths = new Map<ParentNode, TextLength>();
  private readonly contents = new Map<ParentNode, number>();

  /** Visible text length under `node`, furniture left out, and how much of it is link text. */
  text(node: ParentNode): TextLength {
    const known = this.lengths.get(node);
    if (known) return known;
    let all = 0;
    let links = 0;
    for (const child of node.children) {
      if (child.type === 'text') all += child.data.replace(ASCII_WHITESPACE, ' ').trim().length;
      else if (isElement(child) && !isFurniture(child, true)) {
        const inner = this.text(child);
        all += inner.all;
        links += child.name === 'a' ? inner.all : inner.links;
      }
    }
    const length = { all, links };
    this.lengths.set(node, length);
    return length;
  }

  /** Whether `el` is a paragraph the choice scores: 25+ characters, not mostly links. */
  isParagraph(el: Element): boolean {
    if (!SCORED.has(el.name)) return false;
    const { all, links } = this.text(el);
    return all >= 25 && links / all < 0.5;
  }

  /** The text of the scored paragraphs under `node`. */
  content(node: ParentNode): number {
    const known = this.contents.get(node);
    if (known !== undefined) return known;
    let n = 0;
    for (const child of node.children) {
      if (!isElement(child) || isFurniture(child, false)) continue;
      n += this.isParagraph(child) ? this.text(child).all : this.content(child);
    }
    this.contents.set(node, n);
    return n;
  }
}

function densest(root: ParentNode): Element | null {
  const measures = new Measures();
  const scores = new Map<Element, number>();
  const visit = (node: ParentNode): void => {
    for (const child of node.children) {
      if (!isElement(child) || isFurniture(child, false)) continue;
      if (measures.isParagraph(child)) {
        const score = 1 + countCommas(child) + Math.min(3, Math.floor(measures.text(child).all / 100));
        const parent = child.parent?.type === 'tag' ? (child.parent as Element) : null;
        const grand = parent?.parent?.type === 'tag' ? (parent.parent as Element) : null;
        if (parent) scores.set(parent, (scores.get(parent) ?? 0) + score);
        if (grand) scores.set(grand, (scores.get(grand) ?? 0) + score / 2);
      }
      visit(child);
    }
  };
  visit(root);
  let best: Element | null = null;
  let bestScore = 0;
  for (const [el, score] of scores) {
    const { all, links } = measures.text(el);
    const adjusted = score * (1 - (all === 0 ? 0 : links / all));
    if (adjusted > bestScore) [best, bestScore] = [el, adjusted];
  }
  if (best === null) return null;
  // Widen to the parent while what it adds is more of the same (its other paragraphs: posts of
  // a thread, sections of an article) or little and not mostly links (the headline and the
  // lead beside the paragraphs' own container; not a list of related links).
  let chosen: Element = best;
  for (let parent = chosen.parent; parent !== null && parent !== root && parent.type === 'tag'; parent = parent.parent) {
    const inner = measures.text(chosen);
    const outer = measures.text(parent);
    const added = outer.all - inner.all;
    const addedContent = measures.content(parent) - measures.content(chosen);
    const few = inner.all >= 0.65 * outer.all && (added === 0 || (outer.links - inner.links) / added < 0.5);
    if (!few && addedContent < 0.5 * added) break;
    chosen = parent as Element;
  }
  // A page spread over many blocks (a landing page of sections) has no one main block.
  return measures.text(chosen).all >= 0.5 * measures.text(root).all ? chosen : null;
}

function countCommas(el: ParentNode): number {
  let n = 0;
  for (const child of el.children) {
    if (child.type === 'text') n += child.data.split(',').length - 1;
    else if (isElement(child)) n += countCommas(child);
  }
  return n;
}
