/**
 * What one rendered page costs: CPU (the browser's whole process tree, from /proc, and this
 * process: Playwright's protocol, the interception hook, the caller's fetch and the small SPA site
 * it serves from) and wall time, over a bounded loop of sequential renders of an SPA page that
 * builds its links from a JSON fetch (app.js from the subresource cache after the first page).
 * A few warm-up renders first (the browser's launch and first context are not counted).
 * Standalone (not part of `npm run bench`):
 *
 *   node --conditions=trawl-source --import tsx bench/src/render-cpu.ts [renders=20] [contextScope=host|page]
 */
import { MemorySubresourceCache } from '@trawl/render';
import { ChromiumRenderer, processTreeCpuMs } from '@trawl/render/chromium';
import { plainFetch, startSpaSite } from '@trawl/render/testing';

const WARM_UP = 3;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const renders = Number(process.argv[2] ?? 20);
const contextScope = process.argv[3] === 'page' ? 'page' : 'host';
if (!(renders > 0 && renders <= 50)) throw new Error('renders 1..50');

const site = await startSpaSite();
const renderer = new ChromiumRenderer({ pool: { maxOpenPages: 1, contextScope, pagesPerBrowser: 1000, maxBrowserMemoryBytes: 0 } });
const cache = new MemorySubresourceCache();
try {
  const render = async (n: number): Promise<number> => {
    const started = performance.now();
    const result = await renderer.render(site.url(`/spa/${n}`), { fetch: plainFetch, cache });
    if (!result.ok || !result.html.includes(`/item/${n}-2`)) throw new Error(`render ${n} failed: ${result.ok ? 'links missing' : result.error.message}`);
    return performance.now() - started;
  };
  for (let i = 0; i < WARM_UP; i++) await render(1000 + i);
  const pid = await renderer.pool.browserPid();
  if (pid === null) throw new Error('the browser process is not visible in /proc');
  const browserBefore = (await processTreeCpuMs(pid)) ?? 0;
  const nodeBefore = process.cpuUsage();
  const started = performance.now();
  const walls: number[] = [];
  for (let i = 0; i < renders; i++) walls.push(await render(i + 1));
  const wallMs = performance.now() - started;
  const browserMs = ((await processTreeCpuMs(pid)) ?? 0) - browserBefore;
  const node = process.cpuUsage(nodeBefore);
  const nodeMs = (node.user + node.system) / 1000;
  console.log(
    `${renders} renders, context per ${contextScope}: wall ${(wallMs / renders).toFixed(0)} ms/page (median ${median(walls).toFixed(0)}, max ${Math.max(...walls).toFixed(0)}), ` +
      `CPU ${((browserMs + nodeMs) / renders).toFixed(0)} ms/page = browser ${(browserMs / renders).toFixed(0)} + node ${(nodeMs / renders).toFixed(0)} ` +
      `(chromium ${renderer.stats().browsersLaunched === 1 ? 'one browser' : `${renderer.stats().browsersLaunched} browsers`}, node ${process.version}, load average ${(await import('node:os')).loadavg()[0]?.toFixed(1)})`,
  );
} finally {
  await renderer.close();
  await site.close();
}
