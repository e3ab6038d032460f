import { readFileSync } from 'node:fs';
import { toMarkdown, type ToMarkdownOptions } from '../markdown.js';

/**
 * The Markdown evaluation set: hand-written pages shaped like the web's common kinds (news, docs,
 * blog, shop, forum, recipe, encyclopedia, handbook, landing page, cookie banners), each with the
 * Markdown a careful person would write for it, and the scores that compare `toMarkdown` with it.
 */

export interface MarkdownFixture {
  name: string;
  url: string;
  about: string;
  /** Written after toMarkdown's rules were set, and not used to tune them. */
  heldOut: boolean;
  html: string;
  expected: string;
}

export interface MarkdownScores {
  /** Token-level F1 of the words (letters and digits, lowercased; link targets included), as bags. */
  f1: number;
  precision: number;
  recall: number;
  /** Expected headings (level and text) found among the output's headings. */
  headings: { expected: number; kept: number };
  /** Expected table rows (cells, whitespace folded) found among the output's table rows. */
  tableRows: { expected: number; kept: number };
  /** Expected non-blank lines found verbatim (whitespace folded) in the output: the strictest measure. */
  lines: { expected: number; kept: number };
}

/** Where the set lives: two levels up from here, in src/ and dist/ alike. */
const FIXTURES = new URL('../../src/fixtures/markdown/', import.meta.url);

export function markdownFixtures(): MarkdownFixture[] {
  const index = JSON.parse(readFileSync(new URL('index.json', FIXTURES), 'utf8')) as { name: string; url: string; about: string; heldOut?: boolean }[];
  return index.map((entry) => ({
    ...entry,
    heldOut: entry.heldOut === true,
    html: readFileSync(new URL(`${entry.name}.html`, FIXTURES), 'utf8'),
    expected: readFileSync(new URL(`${entry.name}.md`, FIXTURES), 'utf8'),
  }));
}

const tokens = (markdown: string): string[] => markdown.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

function bag(words: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

const fold = (s: string): string => s.replace(/\s+/g, ' ').trim();
const headings = (markdown: string): string[] => markdown.split('\n').filter((l) => /^#{1,6} /.test(l)).map(fold);
/** Table rows, the delimiter row left out, cells trimmed. */
const tableRows = (markdown: string): string[] =>
  markdown
    .split('\n')
    .filter((l) => /^\s*\|.*\|\s*$/.test(l) && !/^\s*\|(\s*:?-+:?\s*\|)+\s*$/.test(l))
    .map((l) => l.trim().slice(1, -1).split(/(?<!\\)\|/).map(fold).join(' | '));

function kept(expected: string[], actual: string[]): { expected: number; kept: number } {
  const left = bag(actual);
  let found = 0;
  for (const item of expected) {
    const n = left.get(item) ?? 0;
    if (n > 0) {
      found++;
      left.set(item, n - 1);
    }
  }
  return { expected: expected.length, kept: found };
}

export function markdownScores(actual: string, expected: string): MarkdownScores {
  const a = tokens(actual);
  const e = tokens(expected);
  const common = bag(e);
  let overlap = 0;
  for (const w of a) {
    const n = common.get(w) ?? 0;
    if (n > 0) {
      overlap++;
      common.set(w, n - 1);
    }
  }
  const precision = a.length === 0 ? 0 : overlap / a.length;
  const recall = e.length === 0 ? 0 : overlap / e.length;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  const lines = (markdown: string) => markdown.split('\n').map(fold).filter((l) => l !== '');
  return {
    f1,
    precision,
    recall,
    headings: kept(headings(expected), headings(actual)),
    tableRows: kept(tableRows(expected), tableRows(actual)),
    lines: kept(lines(expected), lines(actual)),
  };
}

export interface MarkdownEvaluation {
  pages: { name: string; scores: MarkdownScores }[];
  /** Mean F1 over the pages; headings and table rows pooled over the set. */
  meanF1: number;
  minF1: number;
  headingsKept: number;
  tableRowsKept: number;
  linesKept: number;
}

export function evaluateMarkdown(options: ToMarkdownOptions = {}, fixtures = markdownFixtures()): MarkdownEvaluation {
  const pages = fixtures.map((f) => ({ name: f.name, scores: markdownScores(toMarkdown(f.html, f.url, options), f.expected) }));
  const sum = (pick: (s: MarkdownScores) => number) => pages.reduce((n, p) => n + pick(p.scores), 0);
  return {
    pages,
    meanF1: sum((s) => s.f1) / pages.length,
    minF1: Math.min(...pages.map((p) => p.scores.f1)),
    headingsKept: sum((s) => s.headings.kept) / sum((s) => s.headings.expected),
    tableRowsKept: sum((s) => s.tableRows.kept) / sum((s) => s.tableRows.expected),
    linesKept: sum((s) => s.lines.kept) / sum((s) => s.lines.expected),
  };
}

/** The evaluation as a Markdown table, one row per page and a last row for the set. */
export function evaluationTable(evaluation: MarkdownEvaluation): string {
  const pct = (n: number) => n.toFixed(3);
  const rows = evaluation.pages.map(
    (p) =>
      `| ${p.name} | ${pct(p.scores.f1)} | ${pct(p.scores.precision)} | ${pct(p.scores.recall)} | ${p.scores.headings.kept}/${p.scores.headings.expected} | ${p.scores.tableRows.kept}/${p.scores.tableRows.expected} | ${p.scores.lines.kept}/${p.scores.lines.expected} |`,
  );
  return [
    '| page | F1 | precision | recall | headings kept | table rows kept | lines verbatim |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    `| **all (${evaluation.pages.length})** | **${pct(evaluation.meanF1)}** (min ${pct(evaluation.minF1)}) | | | **${pct(evaluation.headingsKept)}** | **${pct(evaluation.tableRowsKept)}** | **${pct(evaluation.linesKept)}** |`,
  ].join('\n');
}
