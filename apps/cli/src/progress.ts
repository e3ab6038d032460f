import type { CrawlSummary, Progress } from './crawl.js';

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
  for (const bad of s.seeds.invalid) lines.push(`  invalid seed: ${bad}`);
  return lines.join('\n');
}
