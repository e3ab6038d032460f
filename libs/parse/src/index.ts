export {
  DEFAULT_MAX_LINKS,
  type ExtractedLink,
  MAX_TITLE_CHARS,
  type MetaRobots,
  type ParsedPage,
  parseHtml,
  type ParseHtmlOptions,
} from './parse-html.js';
export { DEFAULT_MAX_NESTING_DEPTH } from './nesting.js';
export { type ResolvedLink, type ResolvedLinks, resolveLinks } from './resolve-links.js';
export { type CharsetSource, type DecodedHtml, decodeHtml } from './decode.js';
export { mergeDirectives, parseXRobotsTag, type RobotsDirectives } from './robots-directives.js';
export { countWords, DEFAULT_MAX_TEXT_CHARS, type ExtractedText, extractText, type ExtractTextOptions } from './extract-text.js';
export { type ParsedHtmlPage, parsePage, type ParsePageOptions } from './parse-page.js';
export { DEFAULT_MAX_MARKDOWN_CHARS, toMarkdown, type ToMarkdownOptions } from './markdown.js';
