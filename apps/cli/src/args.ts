import { readFileSync } from 'node:fs';
import { ConfigError } from '@trawl/config';

/** A seed and, when its seeds file line gives one, its priority (0..1). */
export interface SeedLine {
  url: string;
  priority?: number;
}

/**
 * Reads a seeds file: one URL per line, optionally followed by its priority from 0 to 1
 * (`https://example.com/ 0.8`; default 1); blank lines and lines starting with # are ignored.
 */
export function readSeedLines(path: string): SeedLine[] {
  return readFileSync(path, 'utf8')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line, i) => {
      const [url, priority, extra] = line.split(/\s+/) as [string, string?, string?];
      if (priority === undefined) return { url };
      const value = /^(\d+(\.\d*)?|\.\d+)$/.test(priority) ? Number(priority) : Number.NaN;
      if (extra !== undefined || !(value >= 0 && value <= 1)) throw new ConfigError([`${path}:${i + 1}: expected a URL and optionally a priority from 0 to 1, got ${JSON.stringify(line)}`]);
      return { url, priority: value };
    });
}

/** A seeds file's URLs, for a command that gives all its seeds one priority: a line with a priority of its own is refused. */
export function readSeedsFile(path: string): string[] {
  return readSeedLines(path).map((seed) => {
    if (seed.priority !== undefined) throw new ConfigError([`${path}: priorities per line are read by \`trawl crawl\`; give this command's seeds one priority with --priority`]);
    return seed.url;
  });
}

/** Flag values → config overrides (strings are converted and validated by the config schema). */
export function crawlOverrides(flags: Record<string, unknown>): Record<string, unknown> {
  const pick = (key: string) => (flags[key] === undefined ? undefined : flags[key]);
  return {
    namespace: pick('namespace'),
    partitions: pick('partitions'),
    policy: {
      maxPages: pick('maxPages'),
      maxDepth: pick('maxDepth'),
      scope: pick('scope'),
      minDelayMs: pick('minDelayMs'),
    },
    worker: { concurrency: pick('concurrency') },
  };
}
