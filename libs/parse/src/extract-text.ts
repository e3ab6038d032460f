import { franc } from 'franc-min';
import { iso6393To1 } from 'iso-639-3/iso6393-to-1.js';
import { DEFAULT_MAX_NESTING_DEPTH, nestingExceeds } from './nesting.js';
import { BLOCK, decodeText, type HtmlReading, MAX_TITLE_CHARS, readHtml } from './read-html.js';

export interface ExtractedText {
  title: string | null;
  /** `<meta name="description">`, else `og:description`. */
  description: string | null;
  /**
   * Lowercased language tag: `<html lang>`, else `<meta http-equiv="content-language">`, else
   * detected from the text (ISO 639-1 where one exists, else 639-3); null when unknown.
   */
  language: string | null;
  languageSource: 'html' | 'meta' | 'detected' | null;
  /** `<link rel="canonical">`, absolute (resolved against `<base href>` and the page URL). */
  canonical: string | null;
  /** The visible main text: paragraphs one per line, boilerplate left out. */
  text: string;
  wordCount: number;
}

export interface ExtractTextOptions {
  /** Text kept at most (characters); the rest of a huge page is dropped. Default 200,000. */
  maxTextChars?: number;
  /** As in parseHtml: deeper markup is read by a flat fallback. Default 512. */
  maxNestingDepth?: number;
  /**
   * Counts the text's words (`wordCount`); default `countWords`. A caller that passes over the
   * text anyway (SimHash, whose fast path splits the same words) counts them there instead of a
   * pass of its own. It must give what `countWords` gives.
   */
  countWords?: (text: string) => number;
}

export const DEFAULT_MAX_TEXT_CHARS = 200_000;
const MAX_DESCRIPTION_CHARS = 1024;
/** Detection reads this much text: trigram statistics settle long before. */
const DETECT_CHARS = 2000;
/** Shorter text is too little to guess a language from. */
const DETECT_MIN_CHARS = 50;

/** NUL, other C0 controls but tab and newline, DEL, and UTF-16 surrogates without their pair. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** Any character UNSAFE could match: a cheap test that spares most text the lookaround regex. */
// eslint-disable-next-line no-control-regex -- as above
const MAYBE_UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\uD800-\uDFFF]/;
export const safe = (s: string): string => (MAYBE_UNSAFE.test(s) ? s.replace(UNSAFE, '') : s);
const oneLine = (s: string, max: number): string | null => {
  const value = safe(s).replace(/\s+/g, ' ').trim().slice(0, max).trim();
  return value === '' ? null : value;
};

/**
 * The visible main text of a page and what it says about itself, for near-duplicate detection
 * and indexing. Pure, never throws. The text comes from `<article>` when the page has exactly
 * one, else `<main>` (or `role="main"`), else `<body>`; navigation, site headers and footers,
 * sidebars, forms, scripts and blocks whose class or id says cookie banner, share bar, menu,
 * related links… are left out. A header inside the article (its headline) is kept.
 */
export function extractText(html: string, url: string, options: ExtractTextOptions = {}): ExtractedText {
  if (typeof html !== 'string' || html.length === 0) return emptyText();
  try {
    const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
    if (nestingExceeds(html, options.maxNestingDepth ?? DEFAULT_MAX_NESTING_DEPTH)) return flatExtract(html, maxTextChars, options.countWords);
    return textFrom(readHtml(html, { maxTextChars }), url, options.countWords);
  } catch {
    return emptyText();
  }
}

export const emptyText = (): ExtractedText => ({ title: null, description: null, language: null, languageSource: null, canonical: null, text: '', wordCount: 0 });

/** `extractText` from a pass already made (the one `parseHtml`'s links came from); `count` counts the words (see `ExtractTextOptions.countWords`). */
export function textFrom(reading: HtmlReading, url: string, count: (text: string) => number = countWords): ExtractedText {
  const text = cleanLines(reading.rawText);
  const declared = languageTag(reading.htmlLang) ?? null;
  const meta = declared === null ? languageTag(reading.metaLanguage?.split(',')[0]) : null;
  const detected = declared === null && meta === null ? detectLanguage(text) : null;
  return {
    title: reading.title === null ? null : oneLine(reading.title, MAX_TITLE_CHARS),
    description: reading.description === null ? null : oneLine(reading.description, MAX_DESCRIPTION_CHARS),
    language: declared ?? meta ?? detected,
    languageSource: declared !== null ? 'html' : meta !== null ? 'meta' : detected !== null ? 'detected' : null,
    canonical: reading.canonical === null ? null : absolute(reading.canonical, reading.baseHref, url),
    text,
    wordCount: count(text),
  };
}

/**
 * Paragraphs one per line: control characters out, each line's whitespace runs folded to a
 * space and trimmed, blank lines dropped. In one pass rather than line by line: a whitespace
 * run without a line break becomes a space, one with a line break a single line break.
 */
export function cleanLines(raw: string): string {
  // Only the runs that change are matched (a single space or line break stays as it is), so
  // clean stretches are copied by the regular expression engine, not looked at in JavaScript:
  // about a third of the time of a loop over the character codes on realistic pages.
  return safe(raw).replace(UNCLEAN_SPACE, foldSpace).trim();
}

/** Whitespace that folding changes: a run of two or more, or one character that is neither a space nor a line break. */
const UNCLEAN_SPACE = /\s{2,}|[^\S \n]/g;
const foldSpace = (run: string): string => (run.includes('\n') ? '\n' : ' ');

/** A page too deeply nested to parse as a tree: strip the markup in one linear pass. */
export function flatExtract(html: string, maxChars: number, count: (text: string) => number = countWords): ExtractedText {
  const { text: stripped, title } = stripMarkup(html);
  // A tag-free string parses flat (no nesting), which decodes the entities.
  const decoded = decodeText(stripped.replace(/</g, '&lt;'));
  const text = cleanLines(decoded.slice(0, maxChars));
  const detected = detectLanguage(text);
  return {
    title: title === null ? null : oneLine(title, MAX_TITLE_CHARS),
    description: null,
    language: detected,
    languageSource: detected === null ? null : 'detected',
    canonical: null,
    text,
    wordCount: count(text),
  };
}

/** Elements whose content is not markup, and never text we keep (the title is kept aside). */
const RAW_TEXT = new Set(['script', 'style', 'noscript', 'template', 'title', 'textarea', 'xmp']);

/**
 * Markup removed by hand, in time linear in the input (no backtracking regex): tags become a
 * space (a line break for block elements), comments and raw-text elements disappear, an
 * unterminated one ends the text as it would end a browser's.
 */
function stripMarkup(html: string): { text: string; title: string | null } {
  const lower = html.toLowerCase();
  const out: string[] = [];
  let title: string | null = null;
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt === -1) {
      out.push(html.slice(i));
      break;
    }
    out.push(html.slice(i, lt));
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      if (end === -1) break;
      out.push(' ');
      i = end + 3;
      continue;
    }
    const name = /^<\/?([a-z][^\s/>]{0,31})/.exec(lower.slice(lt, lt + 34))?.[1];
    if (name === undefined) {
      out.push('<');
      i = lt + 1;
      continue;
    }
    const gt = html.indexOf('>', lt);
    if (gt === -1) break;
    i = gt + 1;
    if (RAW_TEXT.has(name) && html[lt + 1] !== '/') {
      const close = lower.indexOf(`</${name}`, i);
      if (close === -1) break;
      if (name === 'title') title ??= html.slice(i, close);
      const closeEnd = html.indexOf('>', close);
      i = closeEnd === -1 ? html.length : closeEnd + 1;
      out.push(' ');
      continue;
    }
    out.push(BLOCK.has(name) ? '\n' : ' ');
  }
  return { text: out.join(''), title };
}

/** `en-US`, `en_us`, `EN` → `en-us` / `en`; anything that is not a language tag → undefined. */
function languageTag(value: string | undefined): string | null {
  const tag = value?.trim().toLowerCase().replace(/_/g, '-');
  return tag !== undefined && /^[a-z]{2,3}(-[a-z0-9]{1,8})*$/.test(tag) ? tag : null;
}

function detectLanguage(text: string): string | null {
  if (text.length < DETECT_MIN_CHARS) return null;
  const code = franc(text.slice(0, DETECT_CHARS), { minLength: DETECT_MIN_CHARS });
  if (code === 'und') return null;
  return iso6393To1[code] ?? code;
}

function absolute(href: string, baseHref: string | null, pageUrl: string): string | null {
  try {
    const base = baseHref === null ? pageUrl : new URL(baseHref, pageUrl).href;
    const resolved = new URL(safe(href), base);
    return resolved.protocol === 'http:' || resolved.protocol === 'https:' ? resolved.href : null;
  } catch {
    return null;
  }
}

/** Words as the near-duplicate tokenizer counts them: letter/digit runs, CJK characters one each. */
/**
 * Words in the text: a CJK character is a word of its own where a word would start; otherwise a
 * word is a run of letters, digits and marks, an apostrophe inside it included ("don't" is one
 * word). The same count as matching WORDS globally, without building the array of matches: one
 * pass over the character codes, classifying each code once (CLASS) and astral ones by the
 * regular expressions.
 */
export function countWords(text: string): number {
  let count = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    let width = 1;
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      code = text.codePointAt(i) as number;
      width = code > 0xffff ? 2 : 1;
    }
    const kind = classOf(code);
    if (inWord) {
      if (kind === NOT_WORD && (code === 0x27 || code === 0x2019) && classOf(text.codePointAt(i + 1) ?? 0x20) !== NOT_WORD) {
        // An apostrophe between word characters: the word goes on past it.
      } else if (kind === NOT_WORD) {
        inWord = false;
      }
    } else if (kind === CJK) {
      count++;
    } else if (kind === WORD) {
      count++;
      inWord = true;
    }
    i += width - 1;
  }
  return count;
}

/** What WORDS would match: its pattern, kept for the classification below and for tests. */
export const WORDS = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]|[\p{L}\p{N}\p{M}]+(?:['’][\p{L}\p{N}\p{M}]+)*/gu;
const WORD_CHAR = /^[\p{L}\p{N}\p{M}]$/u;
const CJK_CHAR = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]$/u;
const UNKNOWN = 0;
const NOT_WORD = 1;
const WORD = 2;
/** A word character that starts a word of its own (it is also a WORD inside a run). */
const CJK = 3;
/** The class of each BMP code, filled on first sight; astral codes are asked every time. */
const CLASS = new Uint8Array(0x10000);

function classOf(code: number): number {
  if (code < 0x80) return (code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) ? WORD : NOT_WORD;
  if (code > 0xffff) return classify(code);
  const known = CLASS[code] as number;
  if (known !== UNKNOWN) return known;
  const kind = classify(code);
  CLASS[code] = kind;
  return kind;
}

function classify(code: number): number {
  const char = String.fromCodePoint(code);
  return CJK_CHAR.test(char) ? CJK : WORD_CHAR.test(char) ? WORD : NOT_WORD;
}
