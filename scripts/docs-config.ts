// Rewrites the configuration table in README.md from the config schema (npm run docs:config).
import { readFileSync, writeFileSync } from 'node:fs';
import { settingsMarkdownTable } from '@trawl/config';

const START = '<!-- config:start -->';
const END = '<!-- config:end -->';
const readme = readFileSync('README.md', 'utf8');
const from = readme.indexOf(START);
const to = readme.indexOf(END);
if (from < 0 || to < from) throw new Error(`README.md has no ${START} … ${END} section`);
writeFileSync('README.md', `${readme.slice(0, from + START.length)}\n${settingsMarkdownTable()}\n${readme.slice(to)}`);
console.log('README.md configuration table updated');
