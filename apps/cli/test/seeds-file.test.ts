import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@trawl/config';
import { afterAll, describe, expect, it } from 'vitest';
import { readSeedLines, readSeedsFile } from '../src/args.js';

const dir = mkdtempSync(join(tmpdir(), 'trawl-seeds-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (text: string) => {
  const path = join(dir, `seeds-${(n += 1)}`);
  writeFileSync(path, text);
  return path;
};

describe('seeds files', () => {
  it('reads a URL per line, each with an optional priority', () => {
    expect(readSeedLines(file('# sources\nhttps://a.example/ 0.9\n\n  https://b.example/\t.25\nhttps://c.example/\n'))).toEqual([
      { url: 'https://a.example/', priority: 0.9 },
      { url: 'https://b.example/', priority: 0.25 },
      { url: 'https://c.example/' },
    ]);
  });

  it.each([['https://a.example/ 1.5'], ['https://a.example/ high'], ['https://a.example/ 0.5 extra'], ['https://a.example/ -1']])('refuses %j, naming the line', (line) => {
    const path = file(`https://ok.example/\n${line}\n`);
    expect(() => readSeedLines(path)).toThrow(ConfigError);
    expect(() => readSeedLines(path)).toThrow(`${path}:2`);
  });

  it('refuses per-line priorities where a command gives all its seeds one (trawl seed --priority)', () => {
    expect(readSeedsFile(file('https://a.example/\nhttps://b.example/\n'))).toEqual(['https://a.example/', 'https://b.example/']);
    expect(() => readSeedsFile(file('https://a.example/ 0.5\n'))).toThrow(/--priority/);
  });
});
