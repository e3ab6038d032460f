import { readFileSync } from 'node:fs';

/** Reads a seeds file: one URL per line; blank lines and lines starting with # are ignored. */
export function readSeedsFile(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
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
