import type { FreshnessRow } from '@trawl/db';
import type { CrawlSummary, Progress } from './crawl.js';

/**
 * Text from the crawl (URLs, hosts, titles, servers' error messages) as a terminal may show it:
 * every control character (C0, DEL, C1: ANSI escape sequences, carriage returns, bells) becomes a
 * visible \xNN, so a crawled page cannot move the cursor, recolour or rewrite the operator's
 * terminal. JSON output needs nothing: JSON.stringify escapes them already.
 */
export const terminalText = (text: string): string =>
  // eslint-disable-next-line no-control-regex
  text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

const n = (value: number) => Math.round(value).toLocaleString('en-US');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

export function progressLine(p: Progress): string {
  return (
    `${seconds(p.elapsedMs)}  pages ${n(p.fetched)}  ${p.pagesPerSec.toFixed(1)}/s  ` +
    `frontier ${n(p.queued)}  in flight ${n(p.inFlight)}  hosts ready ${n(p.hostsReady)}/${n(p.hostsWaiting)}  ` +
    `errors ${n(p.errors)}  retries ${n(p.retries)}`
  );
}

/** A status line rewritten in place on a TTY. */
export class StatusLine {
  private shown = false;
  constructor(private readonly stream: NodeJS.WriteStream) {}
  update(text: string): void {
    const width = this.stream.columns ?? 120;
    this.stream.write(`\r\x1b[K${text.slice(0, Math.max(20, width - 1))}`);
    this.shown = true;
  }
  done(): void {
    if (this.shown) this.stream.write('\n');
    this.shown = false;
  }
}

export function summaryText(s: CrawlSummary): string {
  const lines = [
    `crawl ${s.finished} in ${seconds(s.durationMs)} (namespace ${s.namespace})`,
    `  seeds      ${s.seeds.given} given, ${s.seeds.queued} queued, ${s.seeds.known} already known, ${s.seeds.invalid.length} invalid`,
    `  pages      ${n(s.fetched)} fetched, ${s.pagesPerSec.toFixed(1)} pages/s, ${n(s.bytes)} bytes`,
    `  statuses   2xx ${n(s.statuses['2xx'])}  3xx ${n(s.statuses['3xx'])}  4xx ${n(s.statuses['4xx'])}  5xx ${n(s.statuses['5xx'])}`,
    `  failures   ${n(s.fetchErrors)} fetch errors, ${n(s.retries)} retries, ${n(s.deadLettered)} dead-lettered`,
    `  discovered ${n(s.urlsDiscovered)} new URLs (${n(s.bloomFalsePositives)} Bloom false positives caught)`,
    `  left       ${n(s.left.queued)} queued, ${n(s.left.inFlight)} in flight`,
  ];
  const late = s.fetchLateness;
  if (late) lines.push(`  lateness   fetch start after the host's due time: p50 ${ms(late.p50S)}, p90 ${ms(late.p90S)}, p99 ${ms(late.p99S)} (${n(late.count)} fetches here)`);
  for (const blocked of s.blockedHosts) lines.push(`  paused     ${terminalText(blocked.host)} (${n(blocked.queued)} URLs left): ${terminalText(blocked.reason)}; resume it from its host page or with the API`);
  for (const bad of s.seeds.invalid) lines.push(`  invalid seed: ${bad}`);
  return lines.join('\n');
}

const ms = (seconds: number): string => `${(seconds * 1000).toFixed(seconds < 0.01 ? 1 : 0)} ms`;

const duration = (s: number | null): string => {
  if (s === null) return '—';
  if (s < 120) return `${Math.round(s)}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)}h`;
  return `${(s / 86_400).toFixed(1)}d`;
};

/** The freshness report as a text table (the last row, host null, is all hosts). */
export function freshnessTable(rows: readonly FreshnessRow[]): string {
  const head = ['host', 'pages', 'median change', 'overdue', 'oldest overdue', 're-crawls', 'late', 'miss rate'];
  const body = rows.map((r) => [
    r.host === null ? '(all hosts)' : terminalText(r.host),
    n(r.pages),
    duration(r.medianChangeIntervalS),
    n(r.overdue),
    duration(r.oldestOverdueS),
    n(r.recrawls),
    n(r.late),
    r.deadlineMissRate === null ? '—' : `${(r.deadlineMissRate * 100).toFixed(1)}%`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}
