import { describe, expect, it } from 'vitest';
import { evaluateMarkdown, evaluationTable, markdownFixtures, markdownScores } from './testing/index.js';

/**
 * toMarkdown against the hand-written evaluation set (src/fixtures/markdown). The floors are
 * what the current rules reach, less a small margin: a change that loses content, headings or
 * table rows on these pages fails here. docs/markdown.md keeps the table and how it was made.
 */
describe('Markdown evaluation set', () => {
  const fixtures = markdownFixtures();
  const tuned = fixtures.filter((f) => !f.heldOut);

  it('scores as a bag of words, and finds headings, table rows and lines', () => {
    const expected = '# Title\n\nOne two three.\n\n| a | b |\n| --- | --- |\n| 1 | 2 |';
    expect(markdownScores(expected, expected)).toMatchObject({ f1: 1, headings: { expected: 1, kept: 1 }, tableRows: { expected: 2, kept: 2 } });
    const s = markdownScores('## Title\n\nOne two.\n\n| a | b |', expected);
    expect(s.recall).toBeCloseTo(5 / 8);
    expect(s.precision).toBe(1);
    expect(s.headings.kept).toBe(0);
    expect(s.tableRows.kept).toBe(1);
  });

  it('holds 13 pages, 3 of them written after the rules were set', () => {
    expect(fixtures).toHaveLength(13);
    expect(tuned).toHaveLength(10);
  });

  it('keeps the main content, its headings and its tables', () => {
    const all = evaluateMarkdown({}, fixtures);
    console.log(evaluationTable(all));
    expect(all.meanF1).toBeGreaterThanOrEqual(0.95);
    expect(all.minF1).toBeGreaterThanOrEqual(0.75);
    expect(all.headingsKept).toBeGreaterThanOrEqual(0.95);
    expect(all.tableRowsKept).toBeGreaterThanOrEqual(0.95);
    expect(all.linesKept).toBeGreaterThanOrEqual(0.95);
    const set = evaluateMarkdown({}, tuned);
    expect(set.meanF1).toBeGreaterThanOrEqual(0.98);
    expect(set.minF1).toBeGreaterThanOrEqual(0.95);
    // Recall: no page loses its content (the misses are extra furniture, not lost text).
    for (const page of all.pages) expect(page.scores.recall, page.name).toBeGreaterThanOrEqual(0.95);
  });
});
