import { readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { analyzeBench } from './analyze.js';
import { chaosBench } from './chaos.js';
import { compareBench } from './compare.js';
import { crawlBench } from './crawl.js';
import { frontierBench } from './frontier.js';
import { hostileBench } from './hostile.js';
import { markdownBench } from './markdown.js';
import { memoryBench } from './memory.js';
import { profileBench } from './profile.js';
import { renderBench } from './render.js';
import { seenSnapshotBench } from './seen-snapshot.js';
import { spillBench } from './spill.js';
import { testwebBench } from './testweb.js';
import { parseProfileArgs } from './web-profile.js';
import { workersBench } from './workers.js';

// `--profile tiny` runs compare-broad, compare-polite, cost, spill and workers on the tiny pages of the
// earlier benchmarks instead of the realistic web (the default); the others ignore it.
const { profile, rest: wanted } = parseProfileArgs(process.argv.slice(2));

const benches: Record<string, () => Promise<void>> = {
  memory: () => memoryBench(),
  crawl: () => crawlBench(Number(process.env.BENCH_ROUNDS ?? 3)),
  hostile: () => hostileBench(),
  profile: () => profileBench(profile),
  analyze: () => analyzeBench(Number(process.env.BENCH_ROUNDS ?? 7)),
  markdown: async () => markdownBench(Number(process.env.BENCH_ROUNDS ?? 7)),
  'compare-broad': () => compareBench(Number(process.env.BENCH_ROUNDS ?? 3), 'broad', profile),
  'compare-polite': () => compareBench(Number(process.env.BENCH_ROUNDS ?? 3), 'polite', profile),
  chaos: () => chaosBench(),
  frontier: () => frontierBench(),
  workers: () => workersBench(Number(process.env.BENCH_ROUNDS ?? 3), profile),
  cost: async () => (await import('./cost.js')).costBench(profile),
  testweb: () => testwebBench(),
  'seen-snapshot': () => seenSnapshotBench(),
  spill: () => spillBench(profile),
  render: () => renderBench(Number(process.env.BENCH_ROUNDS ?? 3)),
};

/**
 * Where the crawls of the benchmarks store bodies (each run in a directory of its own namespace).
 * What this invocation wrote is removed when it ends, unless BENCH_KEEP_CONTENT=1: a full run
 * stores several GB, and nothing reads it after its crawl (removing it between runs instead
 * would put the file system's work of freeing it inside the next run's timing).
 */
const CONTENT = fileURLToPath(new URL('../../.trawl/bench-content', import.meta.url));
const contentDirs = (): string[] => {
  try {
    return readdirSync(CONTENT);
  } catch {
    return [];
  }
};
const before = new Set(contentDirs());

const names = wanted.length > 0 ? wanted : Object.keys(benches);
for (const name of names) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown benchmark ${name}; have: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n=== ${name} ===`);
  await bench();
}
if (process.env.BENCH_KEEP_CONTENT !== '1') for (const dir of contentDirs()) if (!before.has(dir)) rmSync(`${CONTENT}/${dir}`, { recursive: true, force: true });
process.exit(0);
