import { analyzeBench } from './analyze.js';
import { chaosBench } from './chaos.js';
import { compareBench } from './compare.js';
import { crawlBench } from './crawl.js';
import { frontierBench } from './frontier.js';
import { hostileBench } from './hostile.js';
import { memoryBench } from './memory.js';
import { profileBench } from './profile.js';
import { workersBench } from './workers.js';

const benches: Record<string, () => Promise<void>> = {
  memory: () => memoryBench(),
  crawl: () => crawlBench(Number(process.env.BENCH_ROUNDS ?? 3)),
  hostile: () => hostileBench(),
  profile: () => profileBench(),
  analyze: () => analyzeBench(Number(process.env.BENCH_ROUNDS ?? 7)),
  'compare-broad': () => compareBench(Number(process.env.BENCH_ROUNDS ?? 3), 'broad'),
  'compare-polite': () => compareBench(Number(process.env.BENCH_ROUNDS ?? 3), 'polite'),
  chaos: () => chaosBench(),
  frontier: () => frontierBench(),
  workers: () => workersBench(Number(process.env.BENCH_ROUNDS ?? 3)),
  cost: async () => (await import('./cost.js')).costBench(),
};

const wanted = process.argv.slice(2);
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
process.exit(0);
