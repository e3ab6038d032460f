import { dropNamespace, hostileCrawlEnv, runCrawlProcesses, uniqueNamespace } from '@trawl/cli/testing';
import { HOSTILE_KINDS, startHostileWeb } from '@trawl/testweb';
import { fmt, machine, table, writeSection } from './report.js';

/**
 * The hostile web crawled the way the integration test does it (three processes), and what each
 * hostile host cost as seen by the server: requests, bytes written, the longest response, and the
 * shortest gap between requests.
 */
export async function hostileBench(): Promise<void> {
  const crawler = { maxRedirects: 5, maxBodyBytes: 10 * 1024 * 1024, fetchDeadlineMs: 4000, attempts: 3, robotsMaxBytes: 500 * 1024, minBackoffMs: 0, robotsToken: 'trawl' };
  const delayMs = 150;
  const hostile = await startHostileWeb({ kinds: HOSTILE_KINDS, normalHosts: 3, pagesPerHost: 6, noisyLinks: true, crawler, seed: 11 });
  const namespace = uniqueNamespace('hostilebench');
  const started = Date.now();
  await runCrawlProcesses(hostile.seeds, hostileCrawlEnv(namespace, hostile.allowCidr, crawler, delayMs), 3);
  const wallMs = Date.now() - started;
  await hostile.settle();
  const report = hostile.analyze({ minIntervalMs: delayMs, expected: hostile.normalExpected });

  const rows: (string | number)[][] = [];
  for (const e of hostile.expectations) {
    const entries = hostile.web.log.filter((l) => `http://${l.host}` === e.origin);
    const starts = entries.map((l) => l.start).sort((a, b) => a - b);
    let minGap = Infinity;
    for (let i = 1; i < starts.length; i += 1) minGap = Math.min(minGap, (starts[i] as number) - (starts[i - 1] as number));
    const statuses = new Map<number, number>();
    for (const l of entries) statuses.set(l.status, (statuses.get(l.status) ?? 0) + 1);
    rows.push([
      e.kind,
      entries.length,
      fmt(entries.reduce((s, l) => s + l.bytes, 0)),
      fmt(Math.max(0, ...entries.map((l) => (l.end > 0 ? l.end - l.start : 0)))),
      Number.isFinite(minGap) ? fmt(minGap) : '–',
      [...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' '),
      (report.byKind[e.kind] ?? []).length,
    ]);
  }

  await dropNamespace(namespace);
  await hostile.stop();

  const md = `## The hostile web (issue 3)

Command: \`npm run bench -- hostile\`. ${machine()}

The hostile synthetic web (every kind of \`HOSTILE_KINDS\`, one host each, plus 3 normal hosts),
crawled by \`trawl crawl\` and two \`trawl worker\`s with a 150 ms minimum delay, 3 attempts,
a 4 s fetch deadline, 2 s first-byte and idle timeouts, a 10 MB body cap and at most 40 URLs per
URL pattern; the crawler's allow list is the web's own /16, so the "private" server is off
limits. Wall time ${fmt(wallMs / 1000, 1)} s including process start-up. Figures are from the server's log;
status 0 means the server never finished the response before the client hung up (tarpit, bomb,
timeouts). Violations of the host's expectations (robots, Retry-After, bounds, politeness):
${report.violationCount} in all; requests reaching the private server: ${hostile.privateServer.log.length}.

${table(['host kind', 'requests', 'bytes written by server', 'longest response ms', 'shortest interval between requests ms', 'statuses', 'violations'], rows)}`;
  writeSection('hostile', md);
  console.log(md);
}
