import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropNamespace, runCrawlProcesses, uniqueNamespace } from '@trawl/cli/testing';
import { analyzeLog, TestWeb, type TestWebOptions } from '@trawl/testweb';
import type { RunnerConfig } from './crawlee-runner.js';
import { fmt, machine, median, table, writeSection } from './report.js';

const RUNNER = fileURLToPath(new URL('./crawlee-runner.ts', import.meta.url));
const CONCURRENCY = 32;

export interface Scenario {
  id: 'broad' | 'polite';
  title: string;
  web: TestWebOptions;
  /** robots.txt Crawl-delay in seconds (0: none). */
  crawlDelayS: number;
}

const DISALLOWED = '/q';
const robotsFor = (crawlDelayS: number) => () =>
  `User-agent: *\n${crawlDelayS > 0 ? `Crawl-delay: ${crawlDelayS}\n` : ''}Disallow: ${DISALLOWED}\n`;

export const SCENARIOS: Scenario[] = [
  {
    id: 'broad',
    title: 'broad: 500 hosts × 10 pages, no crawl delay, 1–3 ms latency',
    web: { hosts: 500, pagesPerHost: 10, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 3 }, seed: 21, hostnames: 'test', robotsTxt: robotsFor(0) },
    crawlDelayS: 0,
  },
  {
    id: 'polite',
    title: 'polite: 100 hosts × 30 pages, Crawl-delay 0.5 s, 1–3 ms latency',
    web: { hosts: 100, pagesPerHost: 30, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 3 }, seed: 22, hostnames: 'test', robotsTxt: robotsFor(0.5) },
    crawlDelayS: 0.5,
  },
];

/** What a crawler run reports about itself (pages and politeness come from the server log). */
type Measured = Pick<RunResult, 'durationMs' | 'cpuMs' | 'maxRssMb'>;

interface RunResult {
  crawler: string;
  /** Distinct pages a correct crawl fetches that this one fetched (from the server log). */
  pages: number;
  /** Every request the server saw, robots.txt and duplicates included. */
  requests: number;
  durationMs: number;
  cpuMs: number;
  maxRssMb: number;
  coverage: number;
  duplicates: number;
  robotsViolations: number;
  concurrencyViolations: number;
  intervalViolations: number;
}

async function runTrawl(web: TestWeb, scenario: Scenario, processes: number, hostsFile: string): Promise<Measured> {
  const namespace = uniqueNamespace(`cmp_${scenario.id}`);
  const env = {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.1.0.0/16',
    TRAWL_HOSTS_FILE: hostsFile,
    TRAWL_MIN_DELAY_MS: '0',
    TRAWL_CONCURRENCY: String(CONCURRENCY),
    TRAWL_CONTENT_DIR: `.trawl/bench-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
  };
  const { summary, reports } = await runCrawlProcesses(web.rootUrls(), env, processes);
  await dropNamespace(namespace);
  return {
    durationMs: summary.durationMs,
    cpuMs: reports.reduce((s, r) => s + r.process.cpuMs, 0),
    maxRssMb: reports.reduce((s, r) => s + r.process.maxRssMb, 0),
  };
}

async function runCrawlee(web: TestWeb, scenario: Scenario): Promise<Measured> {
  const config: RunnerConfig = {
    seeds: web.rootUrls(),
    hosts: web
      .hostsFile()
      .trim()
      .split('\n')
      .map((line) => {
        const [address, name] = line.split('\t') as [string, string];
        return [name, address];
      }),
    concurrency: CONCURRENCY,
    sameDomainDelaySecs: scenario.crawlDelayS,
    respectRobotsTxtFile: true,
    maxRequestRetries: 3,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', RUNNER, JSON.stringify(config)], {
    env: { ...process.env, CRAWLEE_LOG_LEVEL: 'ERROR', CRAWLEE_STORAGE_DIR: mkdtempSync(join(tmpdir(), 'crawlee-')) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`crawlee runner exited ${code}: ${err.slice(-2000)}`);
  const result = JSON.parse(out.trim().split('\n').pop() as string) as { durationMs: number; cpuMs: number; maxRssMb: number; finished: number };
  return { durationMs: result.durationMs, cpuMs: result.cpuMs, maxRssMb: result.maxRssMb };
}

async function judged(web: TestWeb, scenario: Scenario, crawler: string, run: () => Promise<Measured>): Promise<RunResult> {
  web.clearLog();
  const measured = await run();
  await web.idle();
  const expected = web.groundTruth(web.rootUrls(), 'any', { allow: (url) => !new URL(url).pathname.startsWith(DISALLOWED) });
  expectedCache = { id: scenario.id, urls: expected };
  const analysis = analyzeLog(web.log, { minIntervalMs: scenario.crawlDelayS * 1000, expected });
  const robotsViolations = web.log.filter((e) => e.path.startsWith(DISALLOWED)).length;
  const coverage = analysis.coverage ? (analysis.coverage.expected - analysis.coverage.missingCount) / analysis.coverage.expected : 0;
  const pages = analysis.coverage ? analysis.coverage.expected - analysis.coverage.missingCount : 0;
  return {
    crawler,
    ...measured,
    pages,
    requests: web.log.length,
    coverage,
    duplicates: analysis.duplicates.extraFetches,
    robotsViolations,
    concurrencyViolations: analysis.concurrency.violationCount,
    intervalViolations: scenario.crawlDelayS > 0 ? analysis.intervals.violationCount : 0,
  };
}

let expectedCache: { id: string; urls: Set<string> } | null = null;
function expectedOf(scenario: Scenario): Set<string> {
  return expectedCache?.id === scenario.id ? expectedCache.urls : new Set();
}

export async function compareBench(rounds: number, only?: Scenario['id']): Promise<void> {
  for (const scenario of SCENARIOS.filter((s) => !only || s.id === only)) {
    const web = await TestWeb.start(scenario.web);
    const dir = mkdtempSync(join(tmpdir(), 'trawl-bench-'));
    const hostsFile = join(dir, 'hosts');
    writeFileSync(hostsFile, web.hostsFile());
    const crawlers: [string, () => Promise<Measured>][] = [
      ['trawl, 1 process', () => runTrawl(web, scenario, 1, hostsFile)],
      ['trawl, 2 processes', () => runTrawl(web, scenario, 2, hostsFile)],
      ['Crawlee CheerioCrawler', () => runCrawlee(web, scenario)],
    ];
    const results = new Map<string, RunResult[]>();
    try {
      for (let round = 0; round < rounds; round += 1) {
        for (const [name, run] of crawlers) {
          const result = await judged(web, scenario, name, run);
          results.set(name, [...(results.get(name) ?? []), result]);
          console.log(`${scenario.id} round ${round + 1} ${name}: ${fmt((result.pages * 1000) / result.durationMs, 1)} pages/s, ${fmt(result.durationMs / 1000, 2)} s, coverage ${fmt(result.coverage * 100, 1)} %`);
        }
      }
    } finally {
      await web.stop();
    }
    // The ideal polite time: the largest host's pages (those a correct crawler fetches) × the delay.
    const perHost = new Map<string, number>();
    for (const url of expectedOf(scenario)) perHost.set(new URL(url).host, (perHost.get(new URL(url).host) ?? 0) + 1);
    const largestHost = Math.max(...perHost.values());
    const ideal = scenario.crawlDelayS > 0 ? largestHost * scenario.crawlDelayS * 1000 : 0;
    const rows = [...results].map(([name, runs]) => {
      const m = (f: (r: RunResult) => number) => median(runs.map(f));
      return [
        name,
        fmt(m((r) => (r.pages * 1000) / r.durationMs), 1),
        fmt(m((r) => (r.requests * 1000) / r.durationMs), 1),
        fmt(m((r) => r.durationMs) / 1000, 2),
        ideal > 0 ? fmt(ideal / m((r) => r.durationMs), 2) : '–',
        fmt(m((r) => r.cpuMs / r.pages), 2),
        fmt(m((r) => r.maxRssMb)),
        `${fmt(m((r) => r.coverage) * 100, 1)} %`,
        fmt(m((r) => r.duplicates)),
        fmt(m((r) => r.robotsViolations)),
        fmt(m((r) => r.concurrencyViolations)),
        scenario.crawlDelayS > 0 ? fmt(m((r) => r.intervalViolations)) : '–',
      ];
    });
    const rate = (name: string) => median((results.get(name) ?? []).map((r) => (r.pages * 1000) / r.durationMs));
    const cpu = (name: string) => median((results.get(name) ?? []).map((r) => r.cpuMs / r.pages));
    const headers = ['crawler', 'pages/s', 'requests/s', 'duration s', 'polite efficiency', 'CPU ms / page', 'peak RSS MB', 'coverage', 'duplicate fetches', 'robots violations', 'concurrent requests to one host', 'intervals under the Crawl-delay'];
    const md = `## trawl vs Crawlee — ${scenario.title}

Command: \`npm run bench -- compare-${scenario.id}\`. ${machine()} · Crawlee @crawlee/cheerio 3.18.1

The same synthetic web for every run (hosts named \`h<i>.test\`, each its own registrable domain,
served on its own 127.1.x.y address; robots.txt \`Disallow: ${DISALLOWED}\`${scenario.crawlDelayS > 0 ? ` and \`Crawl-delay: ${scenario.crawlDelayS}\`` : ''}), every host root a seed, ${rounds} rounds, medians.
trawl: \`trawl crawl\` (+ \`trawl worker\`s), ${CONCURRENCY} jobs per process, TRAWL_MIN_DELAY_MS=0 (so robots.txt's
Crawl-delay and trawl's adaptive delay are the only delays), hosts file for the names.
Crawlee: CheerioCrawler, memory storage, min = max concurrency ${CONCURRENCY}, \`sameDomainDelaySecs: ${scenario.crawlDelayS}\`
(its only per-host politeness: start-to-start per registrable domain; it has no per-host
concurrency limit and ignores Crawl-delay), \`respectRobotsTxtFile: true\`, names resolved by a
\`dns.lookup\` override. Duration: first dispatch to done (process start-up excluded); CPU: all
of the crawler's processes (Redis and PostgreSQL not counted — they are shared services;
Crawlee keeps its queue in process memory); RSS: sum of the processes' peaks. Politeness and
coverage are judged from the server's log.

${table(headers, rows)}

pages/s counts distinct pages a correct crawl must fetch (robots.txt-allowed, canonical), as the
server saw them; requests/s counts every request (robots.txt, duplicates, disallowed). CPU per
page divides by those distinct pages.

Ratios (trawl 1 process ÷ Crawlee): throughput ${fmt(rate('trawl, 1 process') / rate('Crawlee CheerioCrawler'), 2)}×, CPU per page ${fmt(cpu('trawl, 1 process') / cpu('Crawlee CheerioCrawler'), 2)}×.
${scenario.crawlDelayS > 0 ? `Polite efficiency = ideal time (the largest host's ${largestHost} allowed pages × ${scenario.crawlDelayS} s = ${ideal / 1000} s) ÷ duration.` : ''}`;
    writeSection(`compare-${scenario.id}`, md);
    console.log(md);
  }
}
