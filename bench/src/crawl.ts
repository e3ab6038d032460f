import { dropNamespace, runCrawlProcesses, uniqueNamespace } from '@trawl/cli/testing';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { fmt, machine, median, table, writeSection } from './report.js';

interface Run {
  pagesPerSec: number;
  durationMs: number;
  pages: number;
  cpuMs: number;
  maxRssMb: number;
  violations: number;
  duplicates: number;
  missing: number;
}

async function oneRun(web: TestWeb, processes: number, delayMs: number, concurrency: number): Promise<Run> {
  web.clearLog();
  const namespace = uniqueNamespace('bench');
  const env = {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_MIN_DELAY_MS: String(delayMs),
    TRAWL_CONCURRENCY: String(concurrency),
    TRAWL_CONTENT_DIR: `.trawl/bench-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
  };
  const { summary, reports } = await runCrawlProcesses(web.rootUrls(), env, processes);
  await web.idle();
  const analysis = analyzeLog(web.log, { minIntervalMs: delayMs, expected: web.groundTruth(web.rootUrls(), 'any') });

  await dropNamespace(namespace);

  return {
    pages: summary.fetched,
    durationMs: summary.durationMs,
    pagesPerSec: (summary.fetched * 1000) / summary.durationMs,
    cpuMs: reports.reduce((s, r) => s + r.process.cpuMs, 0),
    maxRssMb: Math.max(...reports.map((r) => r.process.maxRssMb)),
    violations: analysis.concurrency.violationCount + analysis.intervals.violationCount,
    duplicates: analysis.duplicates.extraFetches,
    missing: analysis.coverage?.missingCount ?? -1,
  };
}

/** The 50 × 20 synthetic web of the integration test, crawled by 1 and by 3 processes. */
export async function crawlBench(rounds = 3): Promise<void> {
  const web = await TestWeb.start({ hosts: 50, pagesPerHost: 20, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 7 });
  const rows: (string | number)[][] = [];
  try {
    for (const delayMs of [200, 0]) {
      for (const processes of [1, 3]) {
        const runs: Run[] = [];
        for (let r = 0; r < rounds; r += 1) {
          runs.push(await oneRun(web, processes, delayMs, 16));
          console.log(`delay ${delayMs} ms, ${processes} process(es), round ${r + 1}: ${fmt(runs.at(-1)?.pagesPerSec ?? 0, 1)} pages/s`);
        }
        const ideal = delayMs > 0 ? (20 - 1) * delayMs : 0;
        rows.push([
          `${delayMs} ms`,
          processes,
          fmt(median(runs.map((r) => r.pagesPerSec)), 1),
          fmt(median(runs.map((r) => r.durationMs)) / 1000, 2),
          delayMs > 0 ? fmt(ideal / median(runs.map((r) => r.durationMs)), 2) : '–',
          fmt(median(runs.map((r) => (r.cpuMs / r.pages) * 1000)) / 1000, 2),
          fmt(median(runs.map((r) => r.maxRssMb))),
          runs.map((r) => `${r.missing}/${r.duplicates}/${r.violations}`).join(' '),
        ]);
      }
    }
  } finally {
    await web.stop();
  }
  const md = `## The 50 × 20 crawl — tiny pages (2 KB, 1–5 ms)

Command: \`npm run bench -- crawl\`. ${machine()}

The integration test's synthetic web: 50 hosts × 20 pages, 4 intra-host and 2 cross-host links per
page (plus non-canonical variants), 1–5 ms latency, every host root as a seed. One process is
\`trawl crawl\` (dispatcher + worker); three is \`trawl crawl\` plus two \`trawl worker\`s. Each
process runs 16 jobs at once. Median of ${rounds} rounds; each round is a fresh namespace.
Duration is from dispatch start to the frontier and all in-flight work being empty (process
start-up, ~1–2 s with tsx, not included). CPU is all processes' user+system time.

${table(['delay', 'processes', 'pages/s', 'duration s', 'polite efficiency', 'CPU s / 1,000 pages', 'peak RSS MB (max process)', 'missing/duplicate/politeness violations per round (server log)'], rows)}

Polite efficiency = ideal time ÷ duration, where the ideal is the largest host's
(pages − 1) × delay: with a delay, the crawl is bound by politeness, not by processes.`;
  writeSection('crawl-50x20', md);
  console.log(md);
}
