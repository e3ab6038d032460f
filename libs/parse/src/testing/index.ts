export {
  evaluateMarkdown,
  evaluationTable,
  type MarkdownEvaluation,
  type MarkdownFixture,
  markdownFixtures,
  type MarkdownScores,
  markdownScores,
} from './markdown-eval.js';
