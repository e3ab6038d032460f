/**
 * What rendering costs on a web that looks like the web: realistic pages that carry the scripts
 * most server-rendered sites do (an analytics tag from another host, its inline set-up, JSON-LD,
 * the site's own behaviour script), none of which adds a link. One `trawl crawl` process with
 * its defaults, once per TRAWL_RENDER mode:
 * - `never`: HTTP only, the baseline;
 * - `auto` (the default): what the default costs where rendering finds nothing, its samples;
 * - `always`: every page rendered, so (always − never) ÷ pages rendered is the cost of one render.
 *
 * Each run is timed by GNU time: CPU is user + system of the trawl process and every child it
 * reaped (Chromium's processes included); peak RSS is the largest single process (Chromium's
 * included). Completeness and politeness come from the web's request log, the browser's
 * requests included.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropNamespace, trawlRuntime, uniqueNamespace } from '@trawl/cli/testing';
import { analyzeLog, describeProfile, realisticProfile, TestWeb } from '@trawl/testweb';
import { fmt, machine, median, table, writeSection } from './report.js';
import { timedCrawl } from './timed-crawl.js';

const MODES = ['never', 'auto', 'always'] as const;
type Mode = (typeof MODES)[number];

const HOSTS = Number(process.env.BENCH_RENDER_HOSTS ?? 12);
const PAGES = Number(process.env.BENCH_RENDER_PAGES ?? 15);
/** trawl's default delay between requests to a host without a Crawl-delay (TRAWL_MIN_DELAY_MS). */
const DEFAULT_DELAY_MS = 1000;

interface Run {
  mode: Mode;
  /** User + system CPU of the trawl process and every child it reaped, ms. */
  cpuMs: number;
  /** trawl's node process alone (its threads), ms. */
  nodeCpuMs: number;
  peakRssMb: number;
  wallS: number;
  pages: number;
  rendered: number;
  renderFailed: number;
  /** Requests for the site's script, as the server saw them. */
  scriptRequests: number;
  complete: boolean;
  duplicates: number;
  maxPerHost: number;
  intervalViolations: number;
}

async function crawlOnce(web: TestWeb, hostsFile: string, mode: Mode): Promise<Run> {
  const namespace = uniqueNamespace(`bench_render_${mode}`);
  web.clearLog();
  try {
    // What any crawl of the synthetic web needs, and the mode; every other setting trawl's default.
    const env = {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.1.0.0/16',
      TRAWL_HOSTS_FILE: hostsFile,
      TRAWL_CONTENT_DIR: `.trawl/bench-content/${namespace}`,
      TRAWL_RENDER: mode,
    };
    const crawl = await timedCrawl<{ fetched: number; process: { cpuMs: number }; counters: Record<string, number> }>(web.rootUrls(), env, `TRAWL_RENDER=${mode}`);
    const { summary } = crawl;
    await web.idle();
    const expected = web.groundTruth(web.rootUrls(), 'any');
    const report = analyzeLog(web.log, { minIntervalMs: DEFAULT_DELAY_MS, expected });
    return {
      mode,
      cpuMs: crawl.cpuMs,
      nodeCpuMs: summary.process.cpuMs,
      peakRssMb: crawl.peakRssMb,
      wallS: crawl.wallS,
      pages: summary.fetched,
      rendered: summary.counters.rendered ?? 0,
      renderFailed: summary.counters.renderFailed ?? 0,
      scriptRequests: web.log.filter((e) => e.resource === 'script').length,
      complete: report.coverage?.missingCount === 0 && report.coverage.unexpectedCount === 0,
      duplicates: report.duplicates.pageCount,
      maxPerHost: report.concurrency.maxPerHost,
      intervalViolations: report.intervals.violationCount,
    };
  } finally {
    await dropNamespace(namespace);
  }
}

export async function renderBench(rounds: number): Promise<void> {
  const profile = realisticProfile({ scripts: 'typical' });
  const web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 6, crossHostLinks: 2, noisyLinks: false, seed: 4242, baseAddress: '127.1.60.1', hostnames: 'test', profile });
  const hostsFile = join(mkdtempSync(join(tmpdir(), 'trawl-bench-render-')), 'hosts');
  writeFileSync(hostsFile, web.hostsFile());
  const runs = new Map<Mode, Run[]>(MODES.map((m) => [m, []]));
  try {
    for (let round = 0; round < rounds; round++) {
      for (const mode of MODES) {
        const run = await crawlOnce(web, hostsFile, mode);
        console.log(
          `  round ${round + 1} TRAWL_RENDER=${mode}: ${run.pages} pages, ${run.rendered} rendered (${run.renderFailed} failed), CPU ${fmt(run.cpuMs)} ms ` +
            `(node ${fmt(run.nodeCpuMs)}), peak RSS ${fmt(run.peakRssMb)} MB, wall ${fmt(run.wallS, 1)} s, script requests ${run.scriptRequests}, ` +
            `complete ${run.complete}, duplicates ${run.duplicates}, max per host ${run.maxPerHost}, interval violations ${run.intervalViolations}`,
        );
        (runs.get(mode) as Run[]).push(run);
      }
    }
  } finally {
    await web.stop();
  }
  const med = (mode: Mode, pick: (r: Run) => number) => median((runs.get(mode) as Run[]).map(pick));
  const never = { cpu: med('never', (r) => r.cpuMs), wall: med('never', (r) => r.wallS), pages: med('never', (r) => r.pages) };
  const rows = MODES.map((mode) => {
    const cpu = med(mode, (r) => r.cpuMs);
    const pages = med(mode, (r) => r.pages);
    const rendered = med(mode, (r) => r.rendered);
    const all = runs.get(mode) as Run[];
    const polite = all.every((r) => r.complete && r.duplicates === 0 && r.maxPerHost === 1 && r.intervalViolations === 0);
    return [
      mode === 'auto' ? 'auto (default)' : mode,
      fmt(pages),
      fmt(rendered),
      fmt(cpu / 1000, 1),
      fmt(med(mode, (r) => r.nodeCpuMs) / 1000, 1),
      fmt(cpu / pages, 1),
      mode === 'never' ? '—' : `${fmt(cpu / never.cpu, 2)}×`,
      fmt(med(mode, (r) => r.peakRssMb)),
      fmt(med(mode, (r) => r.wallS), 1),
      fmt(med(mode, (r) => r.scriptRequests)),
      polite ? 'yes' : 'NO',
    ];
  });
  const always = { cpu: med('always', (r) => r.cpuMs), wall: med('always', (r) => r.wallS), rendered: med('always', (r) => r.rendered) };
  const perRender = always.rendered > 0 ? (always.cpu - never.cpu) / always.rendered : Number.NaN;
  const auto = { cpu: med('auto', (r) => r.cpuMs), rendered: med('auto', (r) => r.rendered) };
  const markdown = `
## Rendering on realistic pages with typical scripts: what the default \`auto\` and a render cost

Command: \`npm run bench -- render\`. ${machine({ pages: describeProfile(profile), runtime: trawlRuntime() })}

One \`trawl crawl\` process over ${HOSTS} hosts × ${PAGES} pages of the realistic web whose pages carry
the scripts most server-rendered sites do, none of which adds a link or text: an analytics tag
from another host (refused: other hosts are off by default), its inline set-up, JSON-LD, and the
site's own behaviour script (\`/static/site.js\`, a menu toggle). trawl's defaults (1 s between
requests to a host, no Crawl-delay), only \`TRAWL_RENDER\` changed per row; ${rounds === 1 ? 'one run each' : `medians of ${rounds} runs`}.
CPU is GNU time's user + system of the process and every child it reaped (Chromium's processes
included); peak RSS is the largest single process. "Polite" is judged from the server's log,
script requests included: every page once, 1 request in flight per host, no two requests to a
host less than 1 s apart.

${table(['TRAWL_RENDER', 'pages', 'rendered', 'CPU s', 'node process CPU s', 'CPU ms / page', 'CPU vs never', 'peak RSS MB', 'wall s', 'script requests', 'complete, once, polite'], rows)}

- **One render** on these pages costs **${fmt(perRender)} ms of CPU** beyond fetching the page over HTTP
  ((always − never) ÷ ${fmt(always.rendered)} rendered pages), against ${fmt(never.cpu / never.pages, 1)} ms for a whole HTTP-only page
  (process start-up included). A render worker renders about ${fmt(perRender > 0 ? 1000 / perRender : 0, 1)} pages per CPU-second; the \`always\` run
  rendered ${fmt(always.rendered / always.wall, 2)} pages/s on this machine's 2 cores (TRAWL_RENDER_CONCURRENCY 2, the crawl itself beside it).
- **The default, \`auto\`,** rendered ${fmt(auto.rendered)} of ${fmt(med('auto', (r) => r.pages))} pages on this web where rendering finds nothing:
  ${fmt(auto.rendered / HOSTS, 1)} per host, ${fmt(((auto.cpu - never.cpu) / never.cpu) * 100)} % more CPU than \`never\`.
`;
  console.log(markdown);
  // A smaller web or other rounds are for development: printed, not written.
  if (process.env.BENCH_ROUNDS === undefined && process.env.BENCH_RENDER_HOSTS === undefined && process.env.BENCH_RENDER_PAGES === undefined) writeSection('render', markdown);
}
