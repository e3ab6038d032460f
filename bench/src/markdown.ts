import { parsePage, toMarkdown } from '@trawl/parse';
import { evaluateMarkdown, evaluationTable, markdownFixtures } from '@trawl/parse/testing';
import { median, msPer, realisticPage } from './analyze.js';
import { fmt, machine, table } from './report.js';

/**
 * `toMarkdown` (what `trawl export pages --format jsonl|markdown` runs per page): its scores on
 * the hand-written evaluation set (libs/parse/src/fixtures/markdown), and its CPU per page on
 * the generated article pages of the analyze case, beside the crawl's own parse of the same
 * pages. Prints; docs/markdown.md keeps the figures.
 */
export function markdownBench(rounds = 7): void {
  const fixtures = markdownFixtures();
  const all = evaluateMarkdown({}, fixtures);
  const tuned = evaluateMarkdown({}, fixtures.filter((f) => !f.heldOut));
  const heldOut = evaluateMarkdown({}, fixtures.filter((f) => f.heldOut));

  const PAGES = 40;
  const PASSES = 5;
  const pages = Array.from({ length: PAGES }, (_, i) => realisticPage(1000 + i));
  const sizes = pages.map((p) => p.html.length / 1024);
  const markdown = msPer(pages, (p) => toMarkdown(p.html, p.url), rounds, PASSES);
  // The same pages with <main> and <article> made plain divs: the density choice has to find the content.
  const plain = pages.map((p) => ({ url: p.url, html: p.html.replace(/<(\/?)(main|article)>/g, '<$1div>') }));
  const density = msPer(plain, (p) => toMarkdown(p.html, p.url), rounds, PASSES);
  const parse = msPer(pages, (p) => parsePage(p.html, p.url, { maxLinks: 5000, productToken: 'trawl' }), rounds, PASSES);
  const outKb = median(pages.map((p) => toMarkdown(p.html, p.url).length / 1024));

  console.log(`## Markdown: evaluation set and CPU per page

Command: \`npm run bench -- markdown\` (BENCH_ROUNDS=${rounds}). ${machine()}

${evaluationTable(all)}

The ${tuned.pages.length} pages the rules were set on: mean F1 ${fmt(tuned.meanF1, 3)}, headings ${fmt(tuned.headingsKept, 3)}, table rows ${fmt(tuned.tableRowsKept, 3)}.
The ${heldOut.pages.length} held-out pages: mean F1 ${fmt(heldOut.meanF1, 3)}, headings ${fmt(heldOut.headingsKept, 3)}, table rows ${fmt(heldOut.tableRowsKept, 3)}.

${PAGES} generated article pages (${fmt(median(sizes), 1)} KB median, ${fmt(outKb, 1)} KB of Markdown), each ${PASSES} times per round; CPU ms per page, median (and best) round of ${rounds}:
${table(
  ['step', 'median ms', 'best ms'],
  [
    ['toMarkdown', fmt(markdown.median, 3), fmt(markdown.min, 3)],
    ['toMarkdown, main and article made divs (the density choice)', fmt(density.median, 3), fmt(density.min, 3)],
    ['parsePage (the crawl’s links and text, for scale)', fmt(parse.median, 3), fmt(parse.min, 3)],
  ],
)}`);
}
