import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { settingsMarkdownTable } from './load.js';

describe('README', () => {
  it('documents every setting exactly as the schema declares it (npm run docs:config)', () => {
    const readme = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');
    expect(readme).toContain(settingsMarkdownTable());
  });
});
