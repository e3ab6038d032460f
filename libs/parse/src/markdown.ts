import type { ChildNode, Element, ParentNode } from 'domhandler';
import { parseDocument } from 'htmlparser2';
import { extractText, safe } from './extract-text.js';
import { baseUrl, elements, isElement, isFurniture, mainRoot } from './markdown-content.js';
import { DEFAULT_MAX_NESTING_DEPTH, nestingExceeds } from './nesting.js';

/**
 * A page's main content as Markdown (CommonMark with GitHub's pipe tables and strikethrough), for
 * pipelines that feed text to language models: headings, nested lists, tables, fenced code with
 * its language, absolute links, and none of the page's furniture.
 *
 * Built on htmlparser2's DOM (the parser this lib already owns) rather than on turndown or
 * Readability: both parse again with a DOM of their own (domino, linkedom), which costs 3.5–8×
 * the CPU per page, scored lower on the evaluation set (docs/markdown.md has the figures), and
 * turndown's GFM plugin leaves tables without a header row as raw HTML. Which part of the page
 * is the content is markdown-content.ts's to say; this file writes it.
 */

export interface ToMarkdownOptions {
  /**
   * What an image becomes: `drop` (default), `alt` (its alt text, as text), or `link`
   * (`![alt](absolute src)`).
   */
  images?: 'drop' | 'alt' | 'link';
  /** As in parseHtml: deeper markup is not built as a tree; its plain text comes back instead. */
  maxNestingDepth?: number;
  /** Markdown kept at most (characters). Default 1,000,000. */
  maxChars?: number;
}

export const DEFAULT_MAX_MARKDOWN_CHARS = 1_000_000;

/** Block-level elements: they end the paragraph that runs before them. */
const BLOCKS = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'caption', 'center', 'dd', 'details', 'dialog', 'dir', 'div', 'dl', 'dt',
  'fieldset', 'figcaption', 'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hgroup', 'hr', 'html',
  'li', 'main', 'menu', 'nav', 'ol', 'p', 'pre', 'section', 'summary', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);

interface Context {
  base: URL | null;
  images: 'drop' | 'alt' | 'link';
  /** Inside a chosen root that is an article or main: its own header (the headline) stays. */
  insideArticle: boolean;
}

/**
 * `html` (already decoded) as Markdown, links and image sources absolute against `<base href>`
 * and `url`. Pure; never throws: markup it cannot make sense of yields its best effort, and a
 * page nested too deep to build as a tree yields its plain main text.
 */
export function toMarkdown(html: string, url: string, options: ToMarkdownOptions = {}): string {
  if (typeof html !== 'string' || html.length === 0) return '';
  const maxChars = options.maxChars ?? DEFAULT_MAX_MARKDOWN_CHARS;
  try {
    if (nestingExceeds(html, options.maxNestingDepth ?? DEFAULT_MAX_NESTING_DEPTH)) return plainFallback(html, url, maxChars);
    const document = parseDocument(html, { decodeEntities: true });
    const base = baseUrl(document, url);
    const { root, insideArticle } = mainRoot(document);
    const ctx: Context = { base, images: options.images ?? 'drop', insideArticle };
    const markdown = tidy(renderBlocks(root.children, ctx).join('\n\n'));
    return markdown.length > maxChars ? cutAt(markdown, maxChars) : markdown;
  } catch {
    try {
      return plainFallback(html, url, maxChars);
    } catch {
      return '';
    }
  }
}

function plainFallback(html: string, url: string, maxChars: number): string {
  return extractText(html, url, { maxTextChars: maxChars })
    .text.split('\n')
    .map((line) => escapeLineStart(escapeInline(line)))
    .join('\n\n');
}

/** Cut at the last paragraph break before `maxChars`, so no construct is left half open. */
function cutAt(markdown: string, maxChars: number): string {
  const cut = markdown.lastIndexOf('\n\n', maxChars);
  return markdown.slice(0, cut > 0 ? cut : maxChars).trimEnd();
}

function tidy(markdown: string): string {
  return safe(markdown)
    .replace(/\uE000/g, ' ')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

// ---------------------------------------------------------------------------------------------
// Blocks

function skipped(el: Element, ctx: Context): boolean {
  return isFurniture(el, ctx.insideArticle);
}

/** The Markdown blocks of a run of nodes: inline content becomes paragraphs between the blocks. */
function renderBlocks(nodes: readonly ChildNode[], ctx: Context): string[] {
  const out: string[] = [];
  let inline = '';
  const flush = () => {
    const paragraph = inlineText(inline);
    if (paragraph !== '') out.push(escapeLineStart(paragraph));
    inline = '';
  };
  for (const node of nodes) {
    if (node.type === 'text') {
      inline += escapeInline(node.data);
      continue;
    }
    if (!isElement(node) || skipped(node, ctx)) continue;
    if (!BLOCKS.has(node.name)) {
      inline += renderInline(node, ctx);
      continue;
    }
    flush();
    const block = renderBlock(node, ctx);
    if (block !== '') out.push(block);
  }
  flush();
  return out;
}

function renderBlock(el: Element, ctx: Context): string {
  switch (el.name) {
    case 'h1':
    case 'h2':
    case 'h3':
    case 'h4':
    case 'h5':
    case 'h6': {
      const text = oneLine(inlineChildren(el, ctx));
      return text === '' ? '' : `${'#'.repeat(Number(el.name[1]))} ${text}`;
    }
    case 'ul':
    case 'ol':
    case 'menu':
    case 'dir':
      return renderList(el, ctx);
    case 'pre':
      return renderCode(el);
    case 'blockquote': {
      const inner = renderBlocks(el.children, ctx).join('\n\n');
      return inner === '' ? '' : inner.split('\n').map((line) => (line === '' ? '>' : `> ${line}`)).join('\n');
    }
    case 'table':
      return renderTable(el, ctx);
    case 'hr':
      return '---';
    case 'dt': {
      const text = inlineText(inlineChildren(el, ctx));
      return text === '' ? '' : `**${text}**`;
    }
    case 'summary': {
      const text = inlineText(inlineChildren(el, ctx));
      return text === '' ? '' : `**${text}**`;
    }
    default:
      return renderBlocks(el.children, ctx).join('\n\n');
  }
}

function renderList(list: Element, ctx: Context): string {
  const ordered = list.name === 'ol';
  let n = ordered ? Number.parseInt(list.attribs['start'] ?? '1', 10) : 0;
  if (!Number.isFinite(n)) n = 1;
  const items: string[] = [];
  for (const child of list.children) {
    if (child.type === 'text') {
      if (child.data.trim() !== '') items.push(`- ${inlineText(escapeInline(child.data))}`);
      continue;
    }
    if (!isElement(child) || skipped(child, ctx)) continue;
    // A list nested straight in a list (invalid, but common) belongs to the item before it.
    if (child.name === 'ul' || child.name === 'ol') {
      const nested = renderList(child, ctx);
      if (nested === '') continue;
      const indent = items.length === 0 ? '' : '   ';
      const text = nested.split('\n').map((line) => (line === '' ? '' : indent + line)).join('\n');
      if (items.length === 0) items.push(text);
      else items[items.length - 1] += `\n${text}`;
      continue;
    }
    const marker = ordered ? `${n++}. ` : '- ';
    const blocks = child.name === 'li' ? renderBlocks(child.children, ctx) : [renderBlock(child, ctx)].filter((b) => b !== '');
    // Tight items: a nested list follows its line directly; paragraphs keep their blank line.
    let body = '';
    for (const [i, block] of blocks.entries()) {
      if (i === 0) body = block;
      else body += /^(\s*)([-*+]|\d+\.) /.test(block) ? `\n${block}` : `\n\n${block}`;
    }
    const pad = ' '.repeat(marker.length);
    items.push(marker + body.split('\n').map((line, i) => (i === 0 || line === '' ? line : pad + line)).join('\n'));
  }
  return items.join('\n');
}

/** The language of a code block, from the class names highlighters use (`language-ts`, `lang-js`, `highlight-source-python`). */
function codeLanguage(...els: (Element | undefined)[]): string {
  for (const el of els) {
    const classes = el?.attribs['class'];
    if (classes === undefined) continue;
    for (const name of classes.split(/\s+/)) {
      const m = /^(?:language|lang|highlight-source|highlight)-([A-Za-z0-9_+#.-]+)$/.exec(name);
      if (m?.[1] && m[1] !== 'plaintext') return m[1].toLowerCase();
    }
    const lang = el?.attribs['data-lang'] ?? el?.attribs['data-language'];
    if (lang && /^[A-Za-z0-9_+#.-]+$/.test(lang)) return lang.toLowerCase();
  }
  return '';
}

function renderCode(pre: Element): string {
  const code = pre.children.find((c): c is Element => isElement(c) && c.name === 'code');
  const text = rawText(pre).replace(/^\n/, '').replace(/\s+$/, '');
  if (text === '') return '';
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const parent = pre.parent?.type === 'tag' ? (pre.parent as Element) : undefined;
  const grandparent = parent?.parent?.type === 'tag' ? (parent.parent as Element) : undefined;
  return `${fence}${codeLanguage(code, pre, parent, grandparent)}\n${text}\n${fence}`;
}

function rawText(node: ParentNode): string {
  let text = '';
  for (const child of node.children) {
    if (child.type === 'text') text += child.data;
    else if (isElement(child)) text += child.name === 'br' ? '\n' : rawText(child);
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// Tables

/** The rows of `table`, not those of tables nested in its cells. */
function tableRows(table: Element): Element[] {
  const rows: Element[] = [];
  const visit = (node: Element) => {
    for (const child of node.children) {
      if (!isElement(child)) continue;
      if (child.name === 'tr') rows.push(child);
      else if (child.name === 'thead' || child.name === 'tbody' || child.name === 'tfoot') visit(child);
    }
  };
  visit(table);
  return rows;
}

/** A colspan or rowspan, within what a real table uses (HTML caps colspan at 1000). */
const span = (value: string | undefined): number => Math.min(Math.max(Number.parseInt(value ?? '1', 10) || 1, 1), 50);

const cellsOf = (row: Element): Element[] => row.children.filter((c): c is Element => isElement(c) && (c.name === 'td' || c.name === 'th'));

/** A table used for layout: a presentation role, a table nested in it, or cells holding whole blocks. */
function isLayoutTable(table: Element, rows: Element[]): boolean {
  const role = table.attribs['role']?.trim().toLowerCase();
  if (role === 'presentation' || role === 'none') return true;
  for (const row of rows) {
    for (const cell of cellsOf(row)) {
      for (const el of elements(cell)) {
        if (el.name === 'table' || el.name === 'pre' || /^h[1-6]$/.test(el.name) || (el.name === 'p' && rows.length === 1)) return true;
      }
    }
  }
  return rows.length === 1 && cellsOf(rows[0] as Element).length === 1;
}

function renderTable(table: Element, ctx: Context): string {
  const rows = tableRows(table);
  if (rows.length === 0) return renderBlocks(table.children, ctx).join('\n\n');
  if (isLayoutTable(table, rows)) {
    return rows.flatMap((row) => cellsOf(row).flatMap((cell) => renderBlocks(cell.children, ctx))).join('\n\n');
  }
  // Cells spanning rows take their place in the rows below, empty, so columns stay aligned.
  const spanned: number[] = [];
  const grid = rows
    .map((row) => {
      const cells: string[] = [];
      const take = () => {
        while ((spanned[cells.length] ?? 0) > 0) {
          spanned[cells.length] = (spanned[cells.length] ?? 1) - 1;
          cells.push('');
        }
      };
      for (const cell of cellsOf(row)) {
        take();
        const text = oneLine(inlineChildren(cell, ctx, true)).replace(/\|/g, '\\|');
        const colspan = span(cell.attribs['colspan']);
        const rowspan = span(cell.attribs['rowspan']);
        for (let i = 0; i < colspan; i++) {
          if (rowspan > 1) spanned[cells.length] = rowspan - 1;
          cells.push(i === 0 ? text : '');
        }
      }
      take();
      return cells;
    })
    .filter((cells) => cells.some((c) => c !== ''));
  if (grid.length === 0) return '';
  const width = Math.max(...grid.map((r) => r.length));
  const line = (cells: string[]) => `| ${[...cells, ...Array<string>(width - cells.length).fill('')].join(' | ')} |`;
  const caption = table.children.find((c): c is Element => isElement(c) && c.name === 'caption');
  const title = caption ? inlineText(inlineChildren(caption, ctx)) : '';
  // GFM needs a header row: the first row is it (a table without one repeats nothing).
  const lines = [line(grid[0] as string[]), `| ${Array<string>(width).fill('---').join(' | ')} |`, ...grid.slice(1).map(line)];
  return (title === '' ? '' : `${title}\n\n`) + lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Inline content

/**
 * Folds whitespace and trims, keeping the line breaks of `<br>`: those travel as U+E000 (a
 * private-use character, removed from the page's own text) until here.
 */
function inlineText(s: string): string {
  return s
    .replace(/[ \t\n\f\r\u00a0]+/g, ' ')
    .replace(/ ?\uE000 ?/g, '\uE000')
    .replace(/^[ \uE000]+|[ \uE000]+$/g, '')
    .replace(/\uE000+/g, '\\\n');
}

/** A heading's or a cell's text: one line. */
function oneLine(s: string): string {
  return inlineText(s.replace(/\uE000/g, ' '));
}

function inlineChildren(el: ParentNode, ctx: Context, inCell = false): string {
  let out = '';
  for (const child of el.children) {
    if (child.type === 'text') out += escapeInline(child.data);
    else if (isElement(child) && !skipped(child, ctx)) {
      if (inCell && child.name === 'br') out += ' ';
      else if (BLOCKS.has(child.name) || child.name === 'br') out += child.name === 'br' ? '\uE000' : ` ${inlineChildren(child, ctx, inCell)} `;
      else out += renderInline(child, ctx, inCell);
    }
  }
  return out;
}

/** Wraps `inner` in a marker, keeping its outer whitespace outside (`** a **` is not bold). */
function wrap(inner: string, marker: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner) as RegExpExecArray;
  return m[2] === '' ? inner : `${m[1]}${marker}${m[2]}${marker}${m[3]}`;
}

function renderInline(el: Element, ctx: Context, inCell = false): string {
  switch (el.name) {
    case 'br':
      return inCell ? ' ' : '\uE000';
    case 'strong':
    case 'b':
      return wrap(inlineChildren(el, ctx, inCell), '**');
    case 'em':
    case 'i':
    case 'cite':
      return wrap(inlineChildren(el, ctx, inCell), '*');
    case 'del':
    case 's':
    case 'strike':
      return wrap(inlineChildren(el, ctx, inCell), '~~');
    case 'code':
    case 'kbd':
    case 'samp':
    case 'tt': {
      const text = rawText(el).replace(/[\t\n\f\r ]+/g, ' ');
      if (text.trim() === '') return text;
      const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
      const tick = '`'.repeat(longest + 1);
      const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
      return `${tick}${pad}${text}${pad}${tick}`;
    }
    case 'a':
      return renderLink(el, ctx, inCell);
    case 'img':
      return renderImage(el, ctx);
    case 'sup':
    case 'sub':
      return inlineChildren(el, ctx, inCell);
    default:
      return inlineChildren(el, ctx, inCell);
  }
}

function absolute(href: string, ctx: Context): string | null {
  try {
    const resolved = new URL(href.trim(), ctx.base ?? undefined);
    if (!['http:', 'https:', 'mailto:', 'ftp:'].includes(resolved.protocol)) return null;
    return resolved.href;
  } catch {
    return null;
  }
}

/** A link destination CommonMark reads whole: `<…>` around one with spaces or parentheses. */
function destination(href: string): string {
  return /[\s()<>]/.test(href) ? `<${href.replace(/[<>\s]/g, encodeURIComponent)}>` : href;
}

function renderLink(el: Element, ctx: Context, inCell: boolean): string {
  const text = inlineChildren(el, ctx, inCell);
  const href = el.attribs['href'];
  // In-page anchors (a heading's ¶, "back to top") and script links carry no place to go.
  if (href === undefined || href.trim().startsWith('#')) return /[\p{L}\p{N}]/u.test(text) ? text : '';
  const target = absolute(href, ctx);
  if (target === null) return text;
  const label = oneLine(text);
  if (label === '') return text;
  const m = /^(\s*)[\s\S]*?(\s*)$/.exec(text) as RegExpExecArray;
  return `${m[1]}[${label}](${destination(target)})${m[2]}`;
}

function renderImage(el: Element, ctx: Context): string {
  const alt = (el.attribs['alt'] ?? '').replace(/\s+/g, ' ').trim();
  if (ctx.images === 'drop') return '';
  if (ctx.images === 'alt') return alt === '' ? '' : ` ${escapeInline(alt)} `;
  const src = el.attribs['src'] ?? el.attribs['data-src'];
  const target = src === undefined ? null : absolute(src, ctx);
  if (target === null) return alt === '' ? '' : ` ${escapeInline(alt)} `;
  return `![${escapeInline(alt).replace(/[[\]]/g, '\\$&')}](${destination(target)})`;
}

/**
 * Escapes what would otherwise read as Markdown inside text: backslashes and backticks, `*` and
 * `_` where they could open or close emphasis, `<` before a tag name, brackets. Kept light on
 * purpose: the reader is a language model as often as a renderer.
 */
function escapeInline(text: string): string {
  return text
    .replace(/\uE000/g, '')
    .replace(/[\\`]/g, '\\$&')
    .replace(/\*/g, '\\*')
    .replace(/(^|[^A-Za-z0-9])_|_(?=[^A-Za-z0-9]|$)/g, (m) => m.replace('_', '\\_'))
    .replace(/<(?=[A-Za-z/!?])/g, '\\<')
    .replace(/\[(?=[^\]]*\][([:])/g, '\\[');
}

/** Escapes a paragraph's first characters that would make it a heading, list, quote or rule. */
function escapeLineStart(line: string): string {
  return line.replace(/^(#{1,6}(?=\s|$)|>|[-+](?=\s)|=+\s*$|(\d+)([.)])(?=\s))/, (m, _all, digits: string | undefined, dot: string | undefined) =>
    digits !== undefined ? `${digits}\\${dot}` : `\\${m}`,
  );
}
