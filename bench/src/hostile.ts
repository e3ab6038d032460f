import { dropNamespace, hostileCrawlEnv, hostileDefaultsEnv, runCrawlProcesses, uniqueNamespace } from '@trawl/cli/testing';
import { type CrawlerLimits, DEFAULT_CRAWLER_LIMITS, HOSTILE_KINDS, startHostileWeb } from '@trawl/testweb';
import { fmt, machine, table, writeSection } from './report.js';

/** trawl's default delay between two requests to a host that names no Crawl-delay (TRAWL_MIN_DELAY_MS). */
const DEFAULT_MIN_DELAY_MS = 1000;

const NORMAL_HOSTS = 3;

/** The hand-tuned run of earlier benchmarks (tight timeouts so traps end fast), shown beside on request. */
const TUNED = {
  crawler: { maxRedirects: 5, maxBodyBytes: 10 * 1024 * 1024, fetchDeadlineMs: 4000, attempts: 3, robotsMaxBytes: 500 * 1024, minBackoffMs: 0, robotsToken: 'trawl' },
  delayMs: 150,
};

interface HostileRun {
  wallMs: number;
  violations: number;
  privateRequests: number;
  /** Normal pages a correct crawl fetches, and how many of them the server served. */
  normal: { expected: number; fetched: number };
  rows: (string | number)[][];
}

/**
 * The hostile web crawled by `trawl crawl` and two `trawl worker`s, and what each hostile host
 * cost as seen by the server: requests, bytes written, the longest response, and the shortest
 * gap between requests. `tuned` null: trawl's defaults.
 */
async function crawlHostile(tuned: typeof TUNED | null): Promise<HostileRun> {
  const crawler: CrawlerLimits = tuned ? tuned.crawler : { ...DEFAULT_CRAWLER_LIMITS };
  const delayMs = tuned ? tuned.delayMs : DEFAULT_MIN_DELAY_MS;
  const hostile = await startHostileWeb({ kinds: HOSTILE_KINDS, normalHosts: NORMAL_HOSTS, pagesPerHost: 6, noisyLinks: true, crawler, seed: 11 });
  const namespace = uniqueNamespace('hostilebench');
  const env = tuned ? hostileCrawlEnv(namespace, hostile.allowCidr, crawler, delayMs) : hostileDefaultsEnv(namespace, hostile.allowCidr);
  // Every normal host's root is a seed, as a user lists the sites to crawl: with the default
  // scope (the seeds' registrable domains; each host here is an address of its own) links
  // between hosts are not followed, so every page is expected from its own host's root.
  const normalRoots = hostile.web.rootUrls().slice(0, NORMAL_HOSTS);
  const expected = tuned ? hostile.normalExpected : hostile.web.groundTruth(normalRoots, 'host');
  const started = Date.now();
  try {
    await runCrawlProcesses([...new Set([...normalRoots, ...hostile.seeds])], env, 3);
    const wallMs = Date.now() - started;
    await hostile.settle();
    const report = hostile.analyze({ minIntervalMs: delayMs, expected });
    const fetched = new Set(hostile.web.log.filter((l) => l.status >= 200 && l.status < 300).map((l) => `http://${l.host}${l.pageKey ?? l.path}`));
    const normal = { expected: expected.size, fetched: [...expected].filter((u) => fetched.has(u)).length };

    const rows: (string | number)[][] = [];
    for (const e of hostile.expectations) {
      const entries = hostile.web.log.filter((l) => `http://${l.host}` === e.origin);
      const starts = entries.map((l) => l.start).sort((a, b) => a - b);
      let minGap = Infinity;
      for (let i = 1; i < starts.length; i += 1) minGap = Math.min(minGap, (starts[i] as number) - (starts[i - 1] as number));
      const statuses = new Map<number, number>();
      for (const l of entries) statuses.set(l.status, (statuses.get(l.status) ?? 0) + 1);
      const last = Math.max(0, ...entries.map((l) => l.end));
      rows.push([
        e.kind,
        entries.length,
        fmt(entries.reduce((s, l) => s + l.bytes, 0)),
        fmt(Math.max(0, ...entries.map((l) => (l.end > 0 ? l.end - l.start : 0)))),
        Number.isFinite(minGap) ? fmt(minGap) : '–',
        last > 0 ? fmt((last - started) / 1000, 1) : '–',
        [...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' '),
        (report.byKind[e.kind] ?? []).length,
      ]);
    }
    return { wallMs, violations: report.violationCount, privateRequests: hostile.privateServer.log.length, normal, rows };
  } finally {
    await dropNamespace(namespace);
    await hostile.stop();
  }
}

const HEADERS = ['host kind', 'requests', 'bytes written by server', 'longest response ms', 'shortest interval between requests ms', 'last response s after start', 'statuses', 'violations'];

/** The defaults run (BENCH_HOSTILE_TUNED=1: the hand-tuned run beside it). */
export async function hostileBench(): Promise<void> {
  const run = await crawlHostile(null);
  const tuned = process.env.BENCH_HOSTILE_TUNED === '1' ? await crawlHostile(TUNED) : null;
  const summary = (r: HostileRun) =>
    `Wall time ${fmt(r.wallMs / 1000, 1)} s including process start-up; normal pages fetched ${r.normal.fetched} of ${r.normal.expected}; ` +
    `violations of the hosts' expectations (robots, Retry-After, bounds, politeness): ${r.violations} in all; requests reaching the private server: ${r.privateRequests}.`;
  const md = `## The hostile web, trawl's defaults

Command: \`npm run bench -- hostile\`. ${machine()}

The hostile synthetic web (every kind of \`HOSTILE_KINDS\`, one host each, plus ${NORMAL_HOSTS} normal hosts
of 6 pages; every host's root a seed), crawled by \`trawl crawl\` and two \`trawl worker\`s with trawl's defaults: the run
sets only \`TRAWL_NAMESPACE\`, \`TRAWL_ALLOW_NETWORKS\` (the web's own /16, so the "private"
server is off limits), \`TRAWL_CONTENT_DIR\` and \`TRAWL_LOG_LEVEL=warn\` — so a 1 s delay per
host without a Crawl-delay, ${DEFAULT_CRAWLER_LIMITS.attempts} attempts, a ${DEFAULT_CRAWLER_LIMITS.fetchDeadlineMs / 1000} s fetch deadline, 20 s first-byte and idle
timeouts, a 10 MB body cap, robots.txt retried after 60 s (doubling), 200 URLs per URL pattern,
links followed within the seeds' domains (so the "private" server is out of scope before the SSRF
guard is even asked). The hosts' expectations
are computed from those same limits. Figures are from the server's log; status 0 means the
server never finished the response before the client hung up (tarpit, bomb, timeouts).

${summary(run)}

${table(HEADERS, run.rows)}
${
  tuned
    ? `
Beside it, hand-tuned (the integration test's settings: ${TUNED.delayMs} ms delay, ${TUNED.crawler.attempts} attempts, a ${TUNED.crawler.fetchDeadlineMs / 1000} s deadline,
2 s timeouts, 300 ms retry bases, at most 40 URLs per pattern, scope any): ${summary(tuned)}

${table(HEADERS, tuned.rows)}`
    : ''
}`;
  writeSection('hostile', md);
  console.log(md);
}
