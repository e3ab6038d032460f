/**
 * What rendering costs in a real crawl: `trawl crawl` (one process: scheduler, fetch stage,
 * process thread, and Chromium as its children) over a synthetic web of one plain host and one
 * single-page app, once with TRAWL_RENDER=never (the app yields its root alone) and once with
 * TRAWL_RENDER=auto (every app page rendered). Each run is timed by GNU time: CPU is user + system
 * of the trawl process and every child it reaped (the browser's processes included), peak RSS the
 * largest single process. The difference between the runs, per rendered page, is what a rendered
 * page costs beyond an HTTP-only one. Standalone (not part of `npm run bench`), bounded:
 *
 *   node --conditions=trawl-source --import tsx bench/src/render-crawl.ts [pages=20]
 */
import { dropNamespace, uniqueNamespace } from '@trawl/cli/testing';
import { scriptedHost, TestWeb } from '@trawl/testweb';
import { timedCrawl } from './timed-crawl.js';

const pages = Number(process.argv[2] ?? 20);
if (!(pages >= 2 && pages <= 50)) throw new Error('pages 2..50');

interface Run {
  mode: string;
  cpuMs: number;
  nodeCpuMs: number;
  peakRssMb: number;
  wallS: number;
  fetched: number;
}

async function crawlOnce(mode: 'never' | 'auto'): Promise<Run> {
  const web = await TestWeb.start({
    hosts: 1,
    pagesPerHost: pages,
    linksPerPage: 3,
    crossHostLinks: 0,
    noisyLinks: false,
    latencyMs: { min: 1, max: 3 },
    extraHosts: 1,
    hostHandlers: { 1: scriptedHost('spa', { pages }) },
  });
  const namespace = uniqueNamespace(`bench_render_${mode}`);
  try {
    const env = {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_SCOPE: 'any',
      TRAWL_MIN_DELAY_MS: '20',
      TRAWL_RENDER: mode,
      TRAWL_CONTENT_DIR: `.trawl/bench-content/${namespace}`,
    };
    const crawl = await timedCrawl<{ fetched: number; process: { cpuMs: number } }>(web.rootUrls(), env, `TRAWL_RENDER=${mode}`);
    return { mode, cpuMs: crawl.cpuMs, nodeCpuMs: crawl.summary.process.cpuMs, peakRssMb: crawl.peakRssMb, wallS: crawl.wallS, fetched: crawl.summary.fetched };
  } finally {
    await web.stop();
    await dropNamespace(namespace);
  }
}

const plain = await crawlOnce('never');
const rendered = await crawlOnce('auto');
for (const run of [plain, rendered]) {
  console.log(`TRAWL_RENDER=${run.mode}: ${run.fetched} fetched, CPU ${run.cpuMs.toFixed(0)} ms (trawl's node process ${run.nodeCpuMs.toFixed(0)} ms), peak RSS ${run.peakRssMb.toFixed(0)} MB, wall ${run.wallS.toFixed(1)} s`);
}
// With `never` the app yields its root alone; with `auto` all of its pages, each rendered.
const extra = pages - 1;
console.log(
  `per rendered page (${pages} rendered, ${extra} of them pages the HTTP-only run never found): ` +
    `CPU ${((rendered.cpuMs - plain.cpuMs) / pages).toFixed(0)} ms, wall ${(((rendered.wallS - plain.wallS) * 1000) / pages).toFixed(0)} ms; ` +
    `HTTP-only pages: CPU ${(plain.cpuMs / plain.fetched).toFixed(1)} ms/fetch (process start-up included)`,
);
