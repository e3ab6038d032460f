/**
 * Readable-looking prose for pages that near-duplicate detection judges: titles, a dateline and
 * paragraphs of sentences, a pure function of (seed, host, page, version). Words come from a
 * fixed vocabulary (common English function words plus a few thousand made-up content words,
 * skewed like natural text), so two different pages share almost no run of three words while
 * a page and its edited copy share nearly all of them.
 */
import { hashInts, mulberry32, pick } from './prng.js';

const FUNCTION_WORDS = (
  'the of and to a in that is was he for it with as his on be at by i this had not are but from or have an they which one you were her ' +
  'all she there would their we him been has when who will more no if out so said what up its about into than them can only other new ' +
  'some could time these two may then do first any my now such like our over man me even most made after also did many before must ' +
  'through back years where much your way well down should because each just those people how too little state good very make world ' +
  'still own see men work long get here between both life being under never day same another know while last might us great old year'
).split(' ');

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'br', 'cr', 'dr', 'fl', 'gr', 'pl', 'pr', 'sk', 'sl', 'st', 'tr', 'ch', 'sh', 'th'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ee', 'oo', 'ou', 'io'];
const CODAS = ['', '', '', 'n', 'r', 's', 'l', 't', 'nd', 'st', 'rk', 'ng', 'm'];
const CONTENT_WORDS = 4096;

let vocabulary: string[] | null = null;

/** The made-up content words: fixed (not seed-dependent), distinct, 1–3 syllables. */
function contentWords(): string[] {
  if (vocabulary !== null) return vocabulary;
  const random = mulberry32(0x5eed_7e47);
  const seen = new Set<string>(FUNCTION_WORDS);
  const words: string[] = [];
  while (words.length < CONTENT_WORDS) {
    const syllables = 1 + pick(random, 3);
    let word = '';
    for (let s = 0; s < syllables; s++) {
      word += (ONSETS[pick(random, ONSETS.length)] as string) + (VOWELS[pick(random, VOWELS.length)] as string);
    }
    word += CODAS[pick(random, CODAS.length)] as string;
    if (word.length >= 3 && !seen.has(word)) {
      seen.add(word);
      words.push(word);
    }
  }
  vocabulary = words;
  return words;
}

/** A content word, skewed towards the front of the vocabulary (a rough Zipf tail). */
function contentWord(random: () => number): string {
  const words = contentWords();
  const r = random();
  return words[Math.floor(r * r * words.length)] as string;
}

const capitalize = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1);

const STREAM_TITLE = 0x7171;
const STREAM_ARTICLE = 0xa271;
const STREAM_EDIT = 0xed17;

/** A page's title: three to six capitalized words. It never changes with the page's version. */
export function pageTitle(seed: number, host: number, page: number): string {
  const random = mulberry32(hashInts(seed, host, page, STREAM_TITLE));
  const count = 3 + pick(random, 4);
  return Array.from({ length: count }, () => capitalize(contentWord(random))).join(' ');
}

export interface Article {
  /** `Published 2019-04-12 · 3,481 views`: the date and the counter a near copy changes. */
  date: string;
  views: number;
  /** Paragraphs of sentences, each sentence a list of words (the last carries the full stop). */
  paragraphs: string[][][];
}

const DAY_MS = 86_400_000;
const EPOCH_2015 = Date.UTC(2015, 0, 1);

function sentence(random: () => number, topic: readonly string[]): string[] {
  const length = 8 + pick(random, 13);
  const words: string[] = [];
  for (let i = 0; i < length; i++) {
    const r = random();
    words.push(r < 0.4 ? (FUNCTION_WORDS[pick(random, FUNCTION_WORDS.length)] as string) : r < 0.55 ? (topic[pick(random, topic.length)] as string) : contentWord(random));
  }
  words[0] = capitalize(words[0] as string);
  words[length - 1] = `${words[length - 1]}${random() < 0.1 ? '?' : '.'}`;
  return words;
}

/** The article of a page at a version: about `words` words in paragraphs of three to six sentences. */
export function article(seed: number, host: number, page: number, version: number, words: number): Article {
  const random = mulberry32(hashInts(seed, host, page, version, STREAM_ARTICLE));
  // Each page has its own handful of topic words, as real articles do.
  const topic = Array.from({ length: 24 }, () => contentWords()[pick(random, CONTENT_WORDS)] as string);
  const date = new Date(EPOCH_2015 + pick(random, 3000) * DAY_MS).toISOString().slice(0, 10);
  const views = 100 + pick(random, 99_900);
  const paragraphs: string[][][] = [];
  let count = 0;
  while (count < words) {
    const sentences = 3 + pick(random, 4);
    const paragraph: string[][] = [];
    for (let s = 0; s < sentences && count < words; s++) {
      const next = sentence(random, topic);
      paragraph.push(next);
      count += next.length;
    }
    paragraphs.push(paragraph);
  }
  return { date, views, paragraphs };
}

export const articleWordCount = (a: Article): number => a.paragraphs.reduce((sum, p) => sum + p.reduce((n, s) => n + s.length, 0), 0);

/**
 * A near copy of an article: another date and view counter, two adjacent sentences swapped, and
 * about one word in a hundred replaced: roughly 1–3 % of the words differ.
 */
export function nearCopy(original: Article, seed: number, host: number, page: number): Article {
  const random = mulberry32(hashInts(seed, host, page, STREAM_EDIT));
  const paragraphs = original.paragraphs.map((p) => p.map((s) => [...s]));
  const swappable = paragraphs.filter((p) => p.length >= 2);
  const target = swappable[pick(random, swappable.length)];
  if (target !== undefined) {
    const i = pick(random, target.length - 1);
    [target[i], target[i + 1]] = [target[i + 1] as string[], target[i] as string[]];
  }
  const total = articleWordCount(original);
  const replacements = Math.max(1, Math.round(total / 100));
  const sentences = paragraphs.flat();
  for (let r = 0; r < replacements; r++) {
    const s = sentences[pick(random, sentences.length)] as string[];
    // Not the first or last word: keep the capital and the full stop where they are.
    if (s.length > 2) s[1 + pick(random, s.length - 2)] = contentWord(random);
  }
  const shift = 1 + pick(random, 400);
  const date = new Date(Date.parse(`${original.date}T00:00:00Z`) + shift * DAY_MS).toISOString().slice(0, 10);
  return { date, views: original.views + 1 + pick(random, 500), paragraphs };
}

function escapeText(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

const thousands = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

/** `<article>` with its dateline and paragraphs. */
export function renderArticle(a: Article, verb = 'Published'): string {
  const paragraphs = a.paragraphs.map((p) => `<p>${escapeText(p.map((s) => s.join(' ')).join(' '))}</p>`).join('\n');
  return `<article>\n<p class="dateline">${verb} ${a.date} · ${thousands(a.views)} views</p>\n${paragraphs}\n</article>`;
}

/** A section heading: two to six words, the first capitalized. */
export function headline(random: () => number): string {
  const count = 2 + pick(random, 5);
  const words = Array.from({ length: count }, () => (random() < 0.3 ? (FUNCTION_WORDS[pick(random, FUNCTION_WORDS.length)] as string) : contentWord(random)));
  words[0] = capitalize(words[0] as string);
  return words.join(' ');
}

/** A paragraph's text: two to seven sentences around a topic. */
export function paragraphText(random: () => number, topic: readonly string[]): string {
  const sentences = 2 + pick(random, 6);
  return Array.from({ length: sentences }, () => sentence(random, topic).join(' ')).join(' ');
}

/** A handful of topic words, as one article or one section of a site has. */
export function topicWords(random: () => number, count = 24): string[] {
  return Array.from({ length: count }, () => contentWords()[pick(random, CONTENT_WORDS)] as string);
}
