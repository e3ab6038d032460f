import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropNamespace, PrivatePostgres, PrivateRedis, runCrawlProcesses, trawlRuntime, uniqueNamespace } from '@trawl/cli/testing';
import type { TestWeb} from '@trawl/testweb';
import { analyzeLog, type RequestLogEntry, type TestWebOptions } from '@trawl/testweb';
import { runToEnd } from './child.js';
import type { RunnerConfig } from './crawlee-runner.js';
import { fmt, machine, median, table, writeSection } from './report.js';
import { machineTicks, postgresCpuMs, processCpuMs } from './service-cpu.js';
import { type BenchProfile, type ProfiledWeb, profiledWeb, startBenchWeb } from './web-profile.js';

const RUNNER = fileURLToPath(new URL('./crawlee-runner.ts', import.meta.url));
/** Crawlee's concurrency, and the hand-tuned trawl rows' jobs per process (trawl's default is 32 too). */
const CONCURRENCY = 32;
/** Links to binary files (PDF, images, archives, …) per page of the polite web, on every host. */
const FILES_PER_PAGE = 1;

export interface Scenario {
  id: 'broad' | 'polite';
  /** The web's shape, without its pages: `broad: 500 hosts × 10 pages, no crawl delay`. */
  title: string;
  /** The web on the tiny pages; the realistic profile replaces its page size and latency. */
  web: TestWebOptions;
  /** robots.txt Crawl-delay in seconds (0: none). */
  crawlDelayS: number;
  /** The realistic profile's latency cap (see profiledWeb). */
  maxLatencyMs?: number;
}

const DISALLOWED = '/q';
const robotsFor = (crawlDelayS: number) => () =>
  `User-agent: *\n${crawlDelayS > 0 ? `Crawl-delay: ${crawlDelayS}\n` : ''}Disallow: ${DISALLOWED}\n`;

/**
 * Hosts of the polite web answer within this on the realistic profile, so the 0.5 s Crawl-delay
 * binds, not a delay that grows with the response time: trawl's adaptive term is 5 × the response
 * time, and with a response's ±20 % spread 80 ms keeps it under 0.5 s.
 */
const POLITE_MAX_LATENCY_MS = 80;

export const SCENARIOS: Scenario[] = [
  {
    id: 'broad',
    title: 'broad: 500 hosts × 10 pages, no crawl delay',
    web: { hosts: 500, pagesPerHost: 10, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 3 }, seed: 21, hostnames: 'test', robotsTxt: robotsFor(0) },
    crawlDelayS: 0,
  },
  {
    id: 'polite',
    title: `polite: 100 hosts × 30 pages, ${FILES_PER_PAGE} file link per page, Crawl-delay 0.5 s`,
    web: {
      hosts: 100,
      pagesPerHost: 30,
      linksPerPage: 4,
      crossHostLinks: 2,
      latencyMs: { min: 1, max: 3 },
      seed: 22,
      hostnames: 'test',
      robotsTxt: robotsFor(0.5),
      // Real sites link documents, images and archives besides their pages.
      fileLinks: { perPage: FILES_PER_PAGE },
    },
    crawlDelayS: 0.5,
    maxLatencyMs: POLITE_MAX_LATENCY_MS,
  },
];

/** A scenario on a profile's pages: its web, and the label and section its report gets. */
function onProfile(base: Scenario, profile: BenchProfile): { scenario: Scenario; pages: ProfiledWeb } {
  const pages = profiledWeb(`compare-${base.id}`, base.web, profile, { maxLatencyMs: base.maxLatencyMs });
  return { scenario: { ...base, web: pages.web }, pages };
}

/** What a crawler run reports about itself (pages and politeness come from the server log). */
type Measured = Pick<RunResult, 'durationMs' | 'cpuMs' | 'serviceCpuMs' | 'maxRssMb' | 'busyCpuMs' | 'machineBusy'>;

interface RunResult {
  crawler: string;
  /** Distinct pages a correct crawl fetches that this one fetched (from the server log). */
  pages: number;
  /** Every request the server saw, robots.txt, files and duplicates included. */
  requests: number;
  /** Requests for linked binary files (PDF, images, archives, …). */
  fileRequests: number;
  durationMs: number;
  cpuMs: number;
  /** CPU of the services the crawler needs besides its own processes: trawl's Redis and PostgreSQL (Crawlee needs none: 0). */
  serviceCpuMs: number;
  maxRssMb: number;
  /**
   * Every CPU ms the machine spent on the crawl from the web's first request to the crawler's exit:
   * the crawler's processes (their start-up before it left out), its Redis and PostgreSQL, and the
   * web (this process). Divided by the cores, the shortest that part of the crawl could take if no
   * thread ever waited for another. Null for Crawlee (its start-up is not told apart).
   */
  busyCpuMs: number | null;
  /**
   * The share of the machine's cores that were busy (`/proc/stat`: anything but idle and I/O
   * wait, whoever ran) over the same span as `busyCpuMs`; near 1, the crawl waited for cores
   * whatever `busyCpuMs` says it needed. Null for Crawlee.
   */
  machineBusy: number | null;
  coverage: number;
  duplicates: number;
  robotsViolations: number;
  concurrencyViolations: number;
  intervalViolations: number;
  /** Server's view: first request's arrival to last response's end. */
  serverSpanMs: number;
  /** Median start-to-start interval between two requests to one host, over every host. */
  medianIntervalMs: number;
  /** Where a polite run's time went beyond the ideal (null without a Crawl-delay). */
  loss: PoliteLoss | null;
  /** Allowed pages of the web's largest host (what the ideal polite time counts). */
  largestHost: number;
  /** The ideal polite time with each Crawl-delay counted from the response's end (see `endRuleIdealMs`); 0 without a delay. */
  idealFromEndsMs: number;
}

/**
 * A polite run's time beyond the ideal, from the server's log: the host that finished last (it
 * sets the duration) — how late its first request (robots.txt) came after the crawl's first
 * request, how much longer than the Crawl-delay it waited for its first page after robots.txt,
 * and how much longer than the Crawl-delay its later intervals were, summed — and the crawl's
 * time outside the server's span (start-up to the first request, last response to done). Over
 * every host: how long after a response ended, beyond the Crawl-delay, the host's next request
 * came (median and 90th percentile), and the same for the second page alone (its URL comes from
 * the first page's links, so the wait is the first page's processing: the start's bottleneck).
 */
interface PoliteLoss {
  lastHostFirstMs: number;
  lastHostRobotsGapExcessMs: number;
  lastHostIntervalsExcessMs: number;
  outsideMs: number;
  afterDelayP50Ms: number;
  afterDelayP90Ms: number;
  secondPageP50Ms: number;
  secondPageP90Ms: number;
}

function politeLoss(log: readonly RequestLogEntry[], delayMs: number, durationMs: number): PoliteLoss | null {
  if (delayMs <= 0 || log.length === 0) return null;
  const at = arrival;
  const endOf = (e: RequestLogEntry) => e.endHr ?? e.end;
  const t0 = Math.min(...log.map(at));
  const after: number[] = [];
  const second: number[] = [];
  let last: { first: number; robotsGap: number; excess: number; end: number } | null = null;
  for (const entries of requestsByHost(log).values()) {
    const gaps = entries.slice(1).map((e, i) => at(e) - at(entries[i] as RequestLogEntry));
    for (let i = 1; i < entries.length; i += 1) after.push(at(entries[i] as RequestLogEntry) - endOf(entries[i - 1] as RequestLogEntry) - delayMs);
    // robots.txt, the first page, then the second: a URL the first page's links gave.
    if (entries.length > 2 && entries[0]?.resource === 'robots') second.push(at(entries[2] as RequestLogEntry) - endOf(entries[1] as RequestLogEntry) - delayMs);
    const host = {
      first: at(entries[0] as RequestLogEntry) - t0,
      robotsGap: (gaps[0] ?? delayMs) - delayMs,
      excess: gaps.slice(1).reduce((sum, gap) => sum + gap - delayMs, 0),
      end: Math.max(...entries.map(endOf)) - t0,
    };
    if (!last || host.end > last.end) last = host;
  }
  if (!last) return null;
  after.sort((a, b) => a - b);
  second.sort((a, b) => a - b);
  const pct = (q: number, values = after) => values[Math.floor(q * (values.length - 1))] ?? 0;
  return {
    lastHostFirstMs: last.first,
    lastHostRobotsGapExcessMs: last.robotsGap,
    lastHostIntervalsExcessMs: last.excess,
    outsideMs: durationMs - last.end,
    afterDelayP50Ms: pct(0.5),
    afterDelayP90Ms: pct(0.9),
    secondPageP50Ms: pct(0.5, second),
    secondPageP90Ms: pct(0.9, second),
  };
}

/** A trawl row: how many processes, and which settings beyond what any run must give. */
interface TrawlRow {
  name: string;
  processes: number;
  /** Each process's roles (the crawl's first), when the stages run apart. */
  roles?: readonly string[];
  /** Settings a user would not need to give (empty: trawl's defaults). */
  tuned: Record<string, string>;
}

/** The hand-tuned settings of the earlier benchmarks, kept beside the defaults. */
const TUNED = { TRAWL_MIN_DELAY_MS: '0', TRAWL_CONCURRENCY: String(CONCURRENCY) };
const envText = (env: Record<string, string>) =>
  Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

/**
 * For development: BENCH_AB='{"name": {"TRAWL_X": "1"}, …}' replaces the trawl rows with one
 * process per named set of settings, run interleaved round by round (an A/B on the same web).
 */
const AB_ROWS: TrawlRow[] | null = process.env.BENCH_AB
  ? Object.entries(JSON.parse(process.env.BENCH_AB) as Record<string, Record<string, string>>).map(([name, tuned]) => ({ name, processes: 1, tuned }))
  : null;

const TRAWL_ROWS: TrawlRow[] = AB_ROWS ?? [
  { name: 'trawl defaults, 1 process', processes: 1, tuned: {} },
  { name: 'trawl defaults, 3 processes', processes: 3, tuned: {} },
  { name: 'trawl defaults, 2 fetch + 2 process processes', processes: 4, roles: ['fetch', 'fetch', 'process', 'process'], tuned: {} },
  { name: 'trawl hand-tuned, 1 process', processes: 1, tuned: TUNED },
];
const CRAWLEE = 'Crawlee CheerioCrawler';

/** The Redis and PostgreSQL of this benchmark alone, so their CPU over a run is that run's. */
interface Services {
  redis: PrivateRedis;
  postgres: PrivatePostgres;
}

/** CPU ms used so far by a crawl's processes, its Redis and PostgreSQL, and the web (this process); and the machine's clock ticks. */
interface CpuSoFar {
  crawler: number;
  services: number;
  web: number;
  /** The machine's clock ticks so far (see `machineTicks`). */
  machine: { busy: number; total: number };
}

async function runTrawl(web: TestWeb, scenario: Scenario, row: TrawlRow, hostsFile: string, services: Services): Promise<Measured> {
  const namespace = uniqueNamespace(`cmp_${scenario.id}`);
  // What any user of the synthetic web must give: a namespace, the loopback range (refused by
  // the SSRF guard otherwise), the hosts file for its names, where bodies go, and quiet logs.
  // Besides: where this benchmark's own Redis and PostgreSQL listen.
  const env = {
    REDIS_URL: services.redis.url,
    DATABASE_URL: services.postgres.url,
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.1.0.0/16',
    TRAWL_HOSTS_FILE: hostsFile,
    TRAWL_CONTENT_DIR: `.trawl/bench-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
    ...row.tuned,
  };
  // BENCH_NODE_ARGS: Node flags for the crawl process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ').filter(Boolean) : [];
  const own = (row.roles ?? []).map((roles) => ({ TRAWL_WORKER_ROLES: roles }));
  // Redis's and PostgreSQL's processes, from /proc alone: read at the web's first request too, so
  // nothing here may wait (on a redis-cli) while the web serves.
  const serviceCpu = () => {
    const redisPid = services.redis.pid;
    if (redisPid === null) throw new Error('the benchmark\'s redis-server is not running');
    return processCpuMs(redisPid) + postgresCpuMs(services.postgres);
  };
  const serviceCpuBefore = serviceCpu();
  const webCpu = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  };
  // At the web's first request: what the crawler's processes (start-up done), the services and
  // the web had used so far.
  let pids: number[] = [];
  let atFirst: CpuSoFar | null = null;
  const watch = setInterval(() => {
    if (atFirst !== null || pids.length === 0 || web.log.length === 0) return;
    atFirst = { crawler: pids.reduce((sum, pid) => sum + processCpuMs(pid), 0), services: serviceCpu(), web: webCpu(), machine: machineTicks() };
  }, 5);
  const { summary, reports } = await runCrawlProcesses(web.rootUrls(), env, row.processes, nodeArgs, own, (crawl, workers) => {
    pids = [crawl, ...workers].flatMap((p) => (p.child.pid === undefined ? [] : [p.child.pid]));
  }).finally(() => clearInterval(watch));
  const webAfter = webCpu();
  const machineAfter = machineTicks();
  // The crawl's PostgreSQL backends exit with its processes: a moment for the postmaster to reap them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const servicesAfter = serviceCpu();
  const serviceCpuMs = servicesAfter - serviceCpuBefore;
  const cpuMs = reports.reduce((s, r) => s + r.process.cpuMs, 0);
  // Set by the timer above (TypeScript cannot see that and narrows it to null).
  const first = atFirst as CpuSoFar | null;
  await dropNamespace(namespace, { redisUrl: services.redis.url, databaseUrl: services.postgres.url });
  // The crawl process's own fetches: how late each started after its host's due time.
  const late = summary.fetchLateness;
  if (late) console.log(`  ${row.name}: fetch lateness (the crawl process's ${late.count} fetches) p50 ${(late.p50S * 1000).toFixed(1)} ms, p90 ${(late.p90S * 1000).toFixed(1)} ms, p99 ${(late.p99S * 1000).toFixed(1)} ms`);
  return {
    durationMs: summary.durationMs,
    cpuMs,
    serviceCpuMs,
    maxRssMb: reports.reduce((s, r) => s + r.process.maxRssMb, 0),
    busyCpuMs: first === null ? null : cpuMs - first.crawler + (servicesAfter - first.services) + (webAfter - first.web),
    machineBusy: first === null ? null : (machineAfter.busy - first.machine.busy) / Math.max(1, machineAfter.total - first.machine.total),
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
  const { stdout: out } = await runToEnd(
    process.execPath,
    ['--import', 'tsx', RUNNER, JSON.stringify(config)],
    { env: { ...process.env, CRAWLEE_LOG_LEVEL: 'ERROR', CRAWLEE_STORAGE_DIR: mkdtempSync(join(tmpdir(), 'crawlee-')) } },
    'crawlee runner',
  );
  const result = JSON.parse(out.trim().split('\n').pop() as string) as { durationMs: number; cpuMs: number; maxRssMb: number; finished: number };
  return { durationMs: result.durationMs, cpuMs: result.cpuMs, serviceCpuMs: 0, maxRssMb: result.maxRssMb, busyCpuMs: null, machineBusy: null };
}

/** The cores the crawlers, their services and the web share. */
const CORES = availableParallelism();

/** The median of `figure` over the runs that measured it (null: not measured, as for Crawlee), or '–' when none did. */
function measured(runs: readonly RunResult[], figure: (run: RunResult) => number | null): string {
  const values = runs.flatMap((r) => figure(r) ?? []);
  return values.length === 0 ? '–' : fmt(median(values), 2);
}

/** Each host's requests, in the order they arrived. */
function requestsByHost(log: readonly RequestLogEntry[]): Map<string, RequestLogEntry[]> {
  const byHost = new Map<string, RequestLogEntry[]>();
  for (const e of log) {
    const entries = byHost.get(e.host) ?? [];
    entries.push(e);
    byHost.set(e.host, entries);
  }
  for (const entries of byHost.values()) entries.sort((a, b) => arrival(a) - arrival(b));
  return byHost;
}

/** Smaller copies of the polite web, for the defaults row beside the full one. */
const SCALE_HOSTS = [20, 50];

/**
 * The defaults row on smaller copies of the polite web (fewer hosts, the same pages per host and
 * Crawl-delay, so the same ideal time): with the delay fixed, the pages per second the crawl has
 * to sustain grow with the hosts, and the efficiency shows how much of the loss is the crawler's
 * load rather than its per-request path. Returns the markdown table (the full web's row from
 * `full`, measured in the same run).
 */
async function politeScale(scenario: Scenario, row: TrawlRow, rounds: number, full: RunResult[], services: Services): Promise<string> {
  const bySize = new Map<number, RunResult[]>([[scenario.web.hosts, full]]);
  for (const hosts of SCALE_HOSTS) {
    const sized: Scenario = { ...scenario, web: { ...scenario.web, hosts } };
    const web = await startBenchWeb(sized.web);
    const hostsFile = join(mkdtempSync(join(tmpdir(), 'trawl-bench-')), 'hosts');
    writeFileSync(hostsFile, web.hostsFile());
    try {
      for (let round = 0; round < rounds; round += 1) {
        const result = await judged(web, sized, row.name, () => runTrawl(web, sized, row, hostsFile, services));
        bySize.set(hosts, [...(bySize.get(hosts) ?? []), result]);
        console.log(`${scenario.id} ${hosts} hosts round ${round + 1} ${row.name}: ${fmt(result.durationMs / 1000, 2)} s, intervals under ${result.intervalViolations}`);
      }
    } finally {
      await web.stop();
    }
  }
  const rows = [...bySize]
    .sort(([a], [b]) => a - b)
    .map(([hosts, runs]) => {
      const m = (f: (r: RunResult) => number) => median(runs.map(f));
      const ideal = idealMsOf(scenario, runs);
      return [
        hosts,
        fmt(hosts / scenario.crawlDelayS),
        fmt(m((r) => (r.pages * 1000) / r.durationMs), 1),
        fmt(m((r) => r.durationMs) / 1000, 2),
        fmt(ideal / m((r) => r.durationMs), 2),
        fmt(m((r) => r.idealFromEndsMs / r.durationMs), 2),
        fmt(m((r) => r.cpuMs / r.pages), 2),
        fmt(m((r) => r.loss?.lastHostIntervalsExcessMs ?? 0)),
        `${fmt(m((r) => r.loss?.afterDelayP50Ms ?? 0), 1)} / ${fmt(m((r) => r.loss?.afterDelayP90Ms ?? 0), 1)}`,
        fmt(m((r) => r.intervalViolations)),
        fmt(m((r) => r.concurrencyViolations)),
        `${fmt(m((r) => r.coverage) * 100, 1)} %`,
      ];
    });
  return `**${row.name}** on copies of this web with fewer hosts (the same ${scenario.web.pagesPerHost} pages per host and
Crawl-delay, so the same ideal time; ${rounds} rounds each, medians): the hosts × the delay set the pages per second
the crawl must sustain, and with them the load on the crawl process (which shares the 2 cores with Redis,
PostgreSQL and the synthetic web). CPU per page includes the process's start-up, a larger share of a smaller crawl.

${table(
  [
    'hosts',
    'pages/s the Crawl-delay allows',
    'pages/s',
    'duration s',
    'polite efficiency',
    'polite efficiency, delay from the response\'s end',
    'CPU ms / page',
    'last host: later intervals beyond the delay (sum) ms',
    'end → next request beyond the delay, p50 / p90 ms',
    'intervals under the Crawl-delay',
    'concurrent requests to one host',
    'coverage',
  ],
  rows,
)}
`;
}

const arrival = (e: RequestLogEntry) => e.startHr ?? e.start;

/** Median of every start-to-start interval between consecutive requests to one host. */
function medianHostInterval(log: readonly RequestLogEntry[]): number {
  const intervals: number[] = [];
  for (const entries of requestsByHost(log).values()) {
    for (let i = 1; i < entries.length; i += 1) intervals.push(arrival(entries[i] as RequestLogEntry) - arrival(entries[i - 1] as RequestLogEntry));
  }
  return intervals.length > 0 ? median(intervals) : 0;
}

async function judged(web: TestWeb, scenario: Scenario, crawler: string, run: () => Promise<Measured>): Promise<RunResult> {
  web.clearLog();
  const measured = await run();
  await web.idle();
  // For development: BENCH_DUMP_LOG=/tmp/web writes each run's server log to /tmp/web.<crawler>.<time>.json.
  if (process.env.BENCH_DUMP_LOG) writeFileSync(`${process.env.BENCH_DUMP_LOG}.${crawler.replace(/\W+/g, '_')}.${Date.now()}.json`, JSON.stringify(web.log));
  const expected = web.groundTruth(web.rootUrls(), 'any', { allow: (url) => !new URL(url).pathname.startsWith(DISALLOWED) });
  const analysis = analyzeLog(web.log, { minIntervalMs: scenario.crawlDelayS * 1000, expected });
  const robotsViolations = web.log.filter((e) => e.path.startsWith(DISALLOWED)).length;
  const coverage = analysis.coverage ? (analysis.coverage.expected - analysis.coverage.missingCount) / analysis.coverage.expected : 0;
  const pages = analysis.coverage ? analysis.coverage.expected - analysis.coverage.missingCount : 0;
  return {
    crawler,
    ...measured,
    pages,
    requests: web.log.length,
    fileRequests: analysis.files.requests,
    coverage,
    duplicates: analysis.duplicates.extraFetches,
    robotsViolations,
    concurrencyViolations: analysis.concurrency.violationCount,
    intervalViolations: scenario.crawlDelayS > 0 ? analysis.intervals.violationCount : 0,
    serverSpanMs: analysis.durationMs,
    medianIntervalMs: medianHostInterval(web.log),
    loss: politeLoss(web.log, scenario.crawlDelayS * 1000, measured.durationMs),
    largestHost: largestHostOf(expected),
    idealFromEndsMs: endRuleIdealMs(web.log, scenario.crawlDelayS * 1000),
  };
}

/**
 * The ideal polite time when each Crawl-delay runs from the end of the host's previous response
 * (as trawl, Heritrix and Yandex read it) rather than from its start: for each host, the requests
 * a correct crawl makes (robots.txt and each allowed page once; no files, no repeats), every one
 * but the last taking the server's own response time plus the delay; the largest such sum over
 * the hosts. Response times are the web's (its latency and the body's transfer, from the server's
 * log), the same for any crawler.
 */
function endRuleIdealMs(log: readonly RequestLogEntry[], delayMs: number): number {
  if (delayMs <= 0) return 0;
  let ideal = 0;
  for (const entries of requestsByHost(log).values()) {
    const seen = new Set<string>();
    let sum = -delayMs;
    let lastResponseMs = 0;
    for (const e of entries) {
      if (e.pageKey === null || e.resource === 'file' || e.pageKey.startsWith(DISALLOWED) || seen.has(e.pageKey)) continue;
      seen.add(e.pageKey);
      lastResponseMs = (e.endHr ?? e.end) - arrival(e);
      sum += lastResponseMs + delayMs;
    }
    ideal = Math.max(ideal, sum - lastResponseMs);
  }
  return ideal;
}

/** Allowed pages of the host with the most of them. */
function largestHostOf(expected: ReadonlySet<string>): number {
  const perHost = new Map<string, number>();
  for (const url of expected) perHost.set(new URL(url).host, (perHost.get(new URL(url).host) ?? 0) + 1);
  return Math.max(0, ...perHost.values());
}

/**
 * The ideal polite time: the largest host's allowed pages, each one Crawl-delay after the request
 * before it. robots.txt is a request to the host too (the server's log judges its interval like
 * any other), so N pages take N + 1 requests and N delays, start to start.
 */
const idealMsOf = (scenario: Scenario, runs: readonly RunResult[]): number =>
  scenario.crawlDelayS > 0 ? median(runs.map((r) => r.largestHost)) * scenario.crawlDelayS * 1000 : 0;

/** What the pages of this run are, in a sentence or two for the report. */
function pagesNote(pages: ProfiledWeb, scenario: Scenario): string {
  if (pages.web.profile === undefined) {
    return `Pages: **${pages.label}** — the synthetic web's tiny pages (links and padding words, a fixed latency band), as the earlier benchmarks ran; \`npm run bench -- compare-${scenario.id}\` runs the realistic web.`;
  }
  const cap =
    scenario.maxLatencyMs === undefined
      ? ''
      : ` Every host answers within ${scenario.maxLatencyMs} ms here, so the Crawl-delay sets the pace, not a delay that grows with the response time (trawl's adaptive delay is 5 × the response time: 2.5 s after a 500 ms answer).`;
  return `Pages: **${pages.label}** (libs/testweb's realistic profile: prose with headings, navigation and footer, sizes and link counts drawn per page, response time drawn per host; the same seed gives the same bytes every run).${cap} The tiny-page rows are in the section beside this one (\`npm run bench -- compare-${scenario.id} --profile tiny\`).`;
}

/**
 * Runs each crawler `rounds` times over the scenario's web and writes the section; a polite
 * scenario also runs the defaults row on smaller copies of its web (`politeScale`). For
 * development, BENCH_HOSTS shrinks the web, BENCH_ONLY (substrings of rows' names, split by |) picks
 * rows, BENCH_AB runs named settings side by side, BENCH_NODE_ARGS passes Node flags; a run with
 * any of them prints its table and leaves BENCHMARKS.md alone.
 */
export async function compareBench(rounds: number, only: Scenario['id'] | undefined, profile: BenchProfile): Promise<void> {
  // Set up as this machine's shared services, on which the earlier runs were made: Redis keeps
  // nothing on disk; PostgreSQL commits with fsync and has Debian's 128 MB of shared buffers.
  const [redis, postgres] = await Promise.all([PrivateRedis.start({ appendOnly: false }), PrivatePostgres.start({ settings: { shared_buffers: '128MB' } })]);
  try {
    for (const base of SCENARIOS.filter((s) => !only || s.id === only)) await compareScenario(base, rounds, profile, { redis, postgres });
  } finally {
    await Promise.all([redis.stop(), postgres.stop()]);
  }
}

async function compareScenario(base: Scenario, rounds: number, profile: BenchProfile, services: Services): Promise<void> {
  const hostsOverride = process.env.BENCH_HOSTS ? Number(process.env.BENCH_HOSTS) : null;
  const rowFilter = process.env.BENCH_ONLY ?? null;
  const development = hostsOverride !== null || rowFilter !== null || AB_ROWS !== null || process.env.BENCH_NODE_ARGS !== undefined;
  const { scenario: profiled, pages } = onProfile(base, profile);
  const scenario = hostsOverride === null ? profiled : { ...profiled, web: { ...profiled.web, hosts: hostsOverride } };
  const web = await startBenchWeb(scenario.web);
  const dir = mkdtempSync(join(tmpdir(), 'trawl-bench-'));
  const hostsFile = join(dir, 'hosts');
  writeFileSync(hostsFile, web.hostsFile());
  const crawlers: [string, () => Promise<Measured>][] = [
    ...TRAWL_ROWS.map((row): [string, () => Promise<Measured>] => [row.name, () => runTrawl(web, scenario, row, hostsFile, services)]),
    [CRAWLEE, () => runCrawlee(web, scenario)] as [string, () => Promise<Measured>],
  ].filter(([name]) => rowFilter === null || rowFilter.split('|').some((part) => name.includes(part)));
  const results = new Map<string, RunResult[]>();
  try {
    for (let round = 0; round < rounds; round += 1) {
      for (const [name, run] of crawlers) {
        const result = await judged(web, scenario, name, run);
        results.set(name, [...(results.get(name) ?? []), result]);
        console.log(
          `${scenario.id} round ${round + 1} ${name}: ${fmt((result.pages * 1000) / result.durationMs, 1)} pages/s, ${fmt(result.durationMs / 1000, 2)} s ` +
            `(server: first request to last response ${fmt(result.serverSpanMs / 1000, 2)} s, median interval ${fmt(result.medianIntervalMs, 1)} ms), ` +
            `coverage ${fmt(result.coverage * 100, 1)} %, intervals under ${result.intervalViolations}, overlaps ${result.concurrencyViolations}` +
            (result.loss
              ? `; last host: first request +${fmt(result.loss.lastHostFirstMs)} ms, robots.txt→page +${fmt(result.loss.lastHostRobotsGapExcessMs)} ms, ` +
                `later intervals +${fmt(result.loss.lastHostIntervalsExcessMs)} ms; outside the server span ${fmt(result.loss.outsideMs)} ms; ` +
                `response end→next request beyond the delay p50 ${fmt(result.loss.afterDelayP50Ms, 1)} / p90 ${fmt(result.loss.afterDelayP90Ms, 1)} ms, ` +
                `first page's end→second page p50 ${fmt(result.loss.secondPageP50Ms)} / p90 ${fmt(result.loss.secondPageP90Ms)} ms`
              : ''),
        );
      }
    }
  } finally {
    await web.stop();
  }
  const ideal = idealMsOf(scenario, [...results.values()].flat());
  const largestHost = scenario.crawlDelayS > 0 ? ideal / (scenario.crawlDelayS * 1000) : 0;
  const defaults = TRAWL_ROWS[0] as TrawlRow;
  const scale =
    scenario.crawlDelayS > 0 && hostsOverride === null && AB_ROWS === null && results.has(defaults.name)
      ? await politeScale(scenario, defaults, rounds, results.get(defaults.name) ?? [], services)
      : '';
  const rows = [...results].map(([name, runs]) => {
    const m = (f: (r: RunResult) => number) => median(runs.map(f));
    return [
      name,
      fmt(m((r) => (r.pages * 1000) / r.durationMs), 1),
      fmt(m((r) => (r.requests * 1000) / r.durationMs), 1),
      fmt(m((r) => r.durationMs) / 1000, 2),
      fmt(m((r) => r.serverSpanMs) / 1000, 2),
      ideal > 0 ? fmt(ideal / m((r) => r.durationMs), 2) : '–',
      ideal > 0 ? fmt(m((r) => r.idealFromEndsMs / r.durationMs), 2) : '–',
      fmt(m((r) => r.cpuMs / r.pages), 2),
      fmt(m((r) => (r.cpuMs + r.serviceCpuMs) / r.pages), 2),
      measured(runs, (r) => (r.busyCpuMs === null ? null : r.busyCpuMs / CORES / 1000)),
      ...(scenario.crawlDelayS > 0 ? [measured(runs, (r) => (r.busyCpuMs === null ? null : Math.min(1, r.idealFromEndsMs / (r.busyCpuMs / CORES))))] : []),
      measured(runs, (r) => r.machineBusy),
      fmt(m((r) => r.maxRssMb)),
      `${fmt(m((r) => r.coverage) * 100, 1)} %`,
      fmt(m((r) => r.duplicates)),
      ...(scenario.web.fileLinks ? [fmt(m((r) => r.fileRequests))] : []),
      fmt(m((r) => r.robotsViolations)),
      fmt(m((r) => r.concurrencyViolations)),
      scenario.crawlDelayS > 0 ? fmt(m((r) => r.medianIntervalMs), 1) : '–',
      scenario.crawlDelayS > 0 ? fmt(m((r) => r.intervalViolations)) : '–',
    ];
  });
  const rate = (name: string) => median((results.get(name) ?? []).map((r) => (r.pages * 1000) / r.durationMs));
  const cpu = (name: string) => median((results.get(name) ?? []).map((r) => r.cpuMs / r.pages));
  const allIn = (name: string) => median((results.get(name) ?? []).map((r) => (r.cpuMs + r.serviceCpuMs) / r.pages));
  const headers = [
    'crawler',
    'pages/s',
    'requests/s',
    'duration s',
    'server: first request to last response s',
    'polite efficiency',
    'polite efficiency, delay from the response\'s end',
    'CPU ms / page',
    'all-in CPU ms / page (with Redis and PostgreSQL)',
    `CPU from the first request on (crawler, Redis, PostgreSQL, web) ÷ ${CORES} cores s`,
    ...(scenario.crawlDelayS > 0 ? ['polite efficiency (from ends) the CPU allows'] : []),
    'share of the machine\'s cores busy over that span (/proc/stat)',
    'peak RSS MB',
    'coverage',
    'duplicate fetches',
    ...(scenario.web.fileLinks ? ['file requests'] : []),
    'robots violations',
    'concurrent requests to one host',
    'median interval per host ms',
    'intervals under the Crawl-delay',
  ];
  const ratios = results.has(CRAWLEE)
    ? TRAWL_ROWS.filter((row) => results.has(row.name))
        .map((row) => `${row.name}: throughput ${fmt(rate(row.name) / rate(CRAWLEE), 2)}×, CPU per page ${fmt(cpu(row.name) / cpu(CRAWLEE), 2)}×, all-in ${fmt(allIn(row.name) / allIn(CRAWLEE), 2)}×`)
        .join('; ')
    : '';
  const lossRows = [...results]
    .filter(([, runs]) => runs.every((r) => r.loss !== null))
    .map(([name, runs]) => {
      const m = (f: (l: PoliteLoss) => number) => fmt(median(runs.map((r) => f(r.loss as PoliteLoss))));
      return [
        name,
        m((l) => l.lastHostFirstMs),
        m((l) => l.lastHostRobotsGapExcessMs),
        m((l) => l.lastHostIntervalsExcessMs),
        m((l) => l.outsideMs),
        m((l) => l.afterDelayP50Ms),
        m((l) => l.afterDelayP90Ms),
        m((l) => l.secondPageP50Ms),
        m((l) => l.secondPageP90Ms),
      ];
    });
  const lossTable =
    lossRows.length > 0
      ? `Where the time beyond the ideal went (medians, ms; from the server's log). The host that finished last sets the
duration: how late its first request came after the crawl's first, how much longer than the Crawl-delay it waited
for its first page after robots.txt, and by how much its later intervals exceeded the Crawl-delay in all; then the
crawl's time outside the server's span (start-up to the first request, the last response to done). Last four
columns, over every host: a response's end to the host's next request, beyond the Crawl-delay; then the same for the
second page alone, whose URL only the first page's links give (the wait for the first page to be processed).

${table(['crawler', 'last host: first request', 'robots.txt → first page, beyond the delay', 'later intervals, beyond the delay (sum)', 'outside the server span', 'end → next request beyond the delay, p50', 'p90', 'first page → second, beyond the delay, p50', 'p90'], lossRows)}
`
      : '';
  const files = scenario.web.fileLinks
    ? `Every page also links about ${FILES_PER_PAGE} binary file (PDF, JPEG, PNG, ZIP, MP4, DOCX, EXE, WOFF2, by its extension), on every
host, as real sites do. trawl's defaults skip such links by their extension (TRAWL_SKIP_EXTENSIONS unset,
TRAWL_NON_HTML=skip); Crawlee has no such filter by default and runs with its defaults here: it
requests every file it finds once (CheerioCrawler aborts the body of a non-HTML response on its Content-Type
and does not retry it).
Its file requests count as requests, not pages, and take turns of its per-domain delay.`
    : '';
  const md = `## trawl vs Crawlee — ${scenario.title} — ${pages.label}

Command: \`${pages.command}\`. ${machine({ 'trawl build': trawlRuntime() })} · Crawlee @crawlee/cheerio 3.18.1

${pagesNote(pages, scenario)}

The same synthetic web for every run, Crawlee's included (hosts named \`h<i>.test\`, each its own registrable domain,
served on its own 127.1.x.y address; robots.txt \`Disallow: ${DISALLOWED}\`${scenario.crawlDelayS > 0 ? ` and \`Crawl-delay: ${scenario.crawlDelayS}\`` : ''}), every host root a seed, ${rounds} rounds, medians.
${files}

What each row sets:
- every trawl row gives only what any crawl of this web needs: \`TRAWL_NAMESPACE\` (a fresh one per run),
  \`TRAWL_ALLOW_NETWORKS=127.1.0.0/16\` (the SSRF guard refuses loopback otherwise), \`TRAWL_HOSTS_FILE\`
  (the names), \`TRAWL_CONTENT_DIR\` (a fresh directory) and \`TRAWL_LOG_LEVEL=warn\`;
- **trawl defaults, 1 process**: nothing else — \`trawl crawl\` alone, every other setting its default
  (${scenario.crawlDelayS > 0 ? `the Crawl-delay is the host's delay; ` : 'TRAWL_MIN_DELAY_MS=1000, so 1 s between requests to a host; '}32 jobs at once, 1 request in flight per host);
- **trawl defaults, 3 processes**: the same, as \`trawl crawl\` + 2 \`trawl worker\`s on the 2 cores;
- **trawl hand-tuned, 1 process**: also ${envText(TUNED)} (the earlier benchmarks' flags${scenario.crawlDelayS > 0 ? '; TRAWL_MIN_DELAY_MS only matters for hosts without a Crawl-delay, so this row should match the defaults' : ': no delay between requests to a host beyond the adaptive one (5 × the response time)'});
- **${CRAWLEE}**: memory storage, min = max concurrency ${CONCURRENCY}, \`sameDomainDelaySecs: ${scenario.crawlDelayS}\`
  (its only per-host politeness: start-to-start per registrable domain; it has no per-host
  concurrency limit and ignores Crawl-delay), \`respectRobotsTxtFile: true\`, \`maxRequestRetries: 3\`,
  \`enqueueLinks({ strategy: 'all' })\`, names resolved by a \`dns.lookup\` override.

Duration: first dispatch to done (process start-up excluded); the server's span is its first
request's arrival to its last response's end. CPU: all of the crawler's processes, start-up
included; all-in adds what the crawler's services used over the run: trawl's Redis (its process's CPU in \`/proc\`)
and PostgreSQL (every process of the cluster, from \`/proc\`), a Redis and a PostgreSQL started for
this benchmark alone (Redis keeping nothing on disk, PostgreSQL committing with fsync, 128 MB of
shared buffers; Crawlee keeps its queue in process memory: its all-in is its CPU).
CPU from the first request on: everything the machine spent on the crawl from the web's first request
to the crawler's exit — the crawler's processes without their start-up (their CPU read from \`/proc\` at
that request), its Redis and PostgreSQL, and the synthetic web (this benchmark's process) — divided by
the ${CORES} cores: the shortest that part of the crawl could take if no thread ever waited for a core.${
  scenario.crawlDelayS > 0
    ? ` The efficiency it allows is the ideal from responses' ends divided by it (at most 1): no order of the same
work does better on these cores; where it is near the measured efficiency, the row is CPU-bound.`
    : ''
} Over the same span the machine's own count (\`/proc/stat\`: all but idle and I/O wait, whoever
ran — the kernel's work for the loopback traffic and anything else on the machine included) gives
the share of the cores that were busy (0–1): near 1, the crawl waited for cores, whatever the sum
before it says it needed.
RSS: sum of the processes' peaks. Politeness and coverage are judged from the server's log.

${table(headers, rows)}

${lossTable}
${scale}
pages/s counts distinct pages a correct crawl must fetch (robots.txt-allowed, canonical), as the
server saw them; requests/s counts every request (robots.txt, files, duplicates, disallowed). CPU per
page divides by those distinct pages. The median interval is start to start between consecutive
requests to one host, robots.txt included.

Ratios to Crawlee: ${ratios}.
${
  scenario.crawlDelayS > 0
    ? `Polite efficiency = ideal time ÷ duration. The ideal: the largest host has ${largestHost} allowed pages; with its
robots.txt that is ${largestHost + 1} requests, so ${largestHost} intervals of ${scenario.crawlDelayS} s from the first request's start to the last's
= ${ideal / 1000} s (the last response's few ms and any start-up or end detection count against the crawler).
That ideal counts the delay from each request's start (as Crawlee's \`sameDomainDelaySecs\` does). trawl counts it from
the end of the host's previous response, as Heritrix and Yandex read Crawl-delay: a host never sees two requests
closer than the delay whatever its response time. "Delay from the response's end" divides the ideal under that rule
by the duration: for each host, every request a correct crawl makes but the last, each its response time in the
server's log plus the delay; the largest over the hosts (${fmt(median([...results.values()].flat().map((r) => r.idealFromEndsMs)) / 1000, 2)} s, median over every run).
trawl's adaptive term (5 × the response time) stays under the Crawl-delay on this web, so the Crawl-delay is what binds.`
    : ''
}`;
  if (development) console.log(md);
  else {
    writeSection(pages.sectionId, md);
    console.log(md);
  }
}
