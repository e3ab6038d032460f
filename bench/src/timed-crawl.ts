/**
 * `trawl crawl <seeds> --json` in a child process under GNU time, so that its CPU counts every
 * child it reaped (Chromium's processes included), not only the node process. The crawl runs the
 * build `trawlRuntime()` names (sources through tsx, or the compiled one with TRAWL_RUNTIME=dist).
 */
import { join } from 'node:path';
import { DATABASE_URL, REDIS_URL, REPO, trawlRuntime } from '@trawl/cli/testing';
import { runToEnd } from './child.js';

export interface TimedCrawl<S> {
  /** The crawl's --json summary. */
  summary: S;
  /** User + system CPU of the process and every child it reaped, ms. */
  cpuMs: number;
  /** The largest single process's peak RSS, MB. */
  peakRssMb: number;
  wallS: number;
}

const entry = (): string[] => (trawlRuntime() === 'dist' ? [join(REPO, 'apps/cli/dist/main.js')] : ['--conditions=trawl-source', '--import', 'tsx', join(REPO, 'apps/cli/src/main.ts')]);

/** Runs the crawl with `env` over trawl's connection defaults and quiet logs; throws with its stderr if it fails. */
export async function timedCrawl<S>(seeds: readonly string[], env: Record<string, string>, label: string): Promise<TimedCrawl<S>> {
  const { stdout: out, stderr: err } = await runToEnd(
    '/usr/bin/time',
    ['-f', 'TIME %U %S %M %e', process.execPath, ...entry(), 'crawl', ...seeds, '--json'],
    { cwd: REPO, env: { ...process.env, REDIS_URL, DATABASE_URL, TRAWL_LOG_LEVEL: 'warn', ...env } },
    `trawl crawl (${label})`,
  );
  const [user, system, maxRssKb, wall] = (/TIME (\S+) (\S+) (\S+) (\S+)/.exec(err)?.slice(1) ?? []).map(Number) as [number, number, number, number];
  return { summary: JSON.parse(out) as S, cpuMs: (user + system) * 1000, peakRssMb: maxRssKb / 1024, wallS: wall };
}
