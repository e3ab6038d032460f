import { admissionMetrics, Metrics } from '@trawl/telemetry';
import type { CrawlOperator, CrawlSnapshot } from './operator.js';

/**
 * The crawl-wide series the dashboard exports on /metrics (Grafana's dashboard is built on
 * them), all from the one cached snapshot the pages use. Labels stay bounded: queue names (one per
 * partition), counter names, state names, error codes, and hosts only for the top-N by queued URLs.
 */
export function dashboardMetrics(operator: CrawlOperator): Metrics {
  const { config } = operator.runtime;
  const metrics = new Metrics({ role: 'dashboard', namespace: config.namespace });
  const gauge = <L extends string>(name: string, help: string, labels: readonly L[], read: (s: CrawlSnapshot, set: (value: number | null, l?: Partial<Record<L, string>>) => void) => void) =>
    metrics.gauge(name, help, labels, async (g) => {
      const snapshot = await operator.snapshot();
      g.reset();
      read(snapshot, (value, l) => {
        if (value === null || !Number.isFinite(value)) return;
        if (l) g.set(l as Record<L, string>, value);
        else g.set(value);
      });
    });

  gauge('trawl_frontier_queued_urls', 'URLs waiting in the frontier\'s back queues.', [], (s, set) => set(s.frontier.queued));
  gauge('trawl_frontier_spilled_urls', 'URLs queued in PostgreSQL rather than Redis, past TRAWL_FRONTIER_REDIS_MAX_URLS (refilled as their hosts run low).', [], (s, set) => set(s.frontier.spilled));
  gauge('trawl_frontier_leased_urls', 'URLs leased out (dispatched, being fetched, or waiting for a retry).', [], (s, set) => set(s.frontier.leased));
  gauge('trawl_frontier_done_total', 'Leases acknowledged since the namespace was created.', [], (s, set) => set(s.frontier.done));
  gauge('trawl_frontier_oldest_queued_age_seconds', 'Age of the oldest queued URL (since it was queued).', [], (s, set) => set(s.frontier.oldestQueuedAgeS));
  gauge('trawl_process_backlog_pages', 'Fetched pages handed to the process stage and not yet recorded (the fetch → process backlog).', [], (s, set) => set(s.frontier.processBacklog));
  gauge('trawl_process_backlog_oldest_age_seconds', 'How long the oldest page waiting for the process stage has waited.', [], (s, set) => set(s.frontier.processOldestAgeS ?? 0));
  gauge('trawl_render_backlog_jobs', 'Pages HTTP-only fetch stages handed to a render stage and not yet taken up (each holds its host).', [], (s, set) => set(s.frontier.renderBacklog));
  gauge('trawl_render_backlog_oldest_age_seconds', 'How long the oldest page waiting for a render stage has waited.', [], (s, set) => set(s.frontier.renderOldestAgeS ?? 0));
  gauge('trawl_hosts', 'Hosts by state: ready (due), waiting (queued URLs, none leased), in_flight, backing_off (estimated from a sample), paused.', ['state'], (s, set) => {
    set(s.frontier.hostsReady, { state: 'ready' });
    set(s.frontier.hostsWaiting, { state: 'waiting' });
    set(s.frontier.hostsInFlight, { state: 'in_flight' });
    set(s.frontier.hostsBackingOff, { state: 'backing_off' });
    set(s.paused.hosts, { state: 'paused' });
  });
  admissionMetrics(metrics, async () => (await operator.snapshot()).admission);
  gauge('trawl_crawl_paused', '1 while the whole crawl is paused.', [], (s, set) => set(s.paused.all ? 1 : 0));
  gauge('trawl_polite_capacity_fetches_per_second', 'Σ over hosts with work of 1 / the delay in force (estimated from a sample): the most politeness allows.', [], (s, set) => set(s.rate.politeCapacityPerSecond));
  gauge('trawl_fetch_rate_per_second', 'Requests (pages and robots.txt) per second over the last 30 s, crawl-wide.', [], (s, set) => set(s.rate.fetchesPerSecond));
  gauge('trawl_queue_jobs', 'Jobs of each BullMQ queue by state (failed: the dead-letter queue).', ['queue', 'state'], (s, set) => {
    for (const q of s.queues) for (const state of ['waiting', 'active', 'delayed', 'failed', 'completed'] as const) set(q[state], { queue: q.name, state });
  });
  gauge('trawl_crawl_events_total', 'Crawl-wide event counters summed over every process (fetched, status2xx…5xx, fetchErrors, retries, dead, robotsDisallowed, …).', ['event'], (s, set) => {
    for (const [event, value] of Object.entries(s.counters)) set(value, { event });
  });
  gauge('trawl_dead_letters', 'Fetch jobs in the dead-letter queue (failed sets).', [], (s, set) => set(s.deadLetters.count));
  gauge('trawl_dead_letter_reasons', 'Dead letters by reason code, among the newest ones of each queue.', ['reason'], (s, set) => {
    for (const r of s.deadLetters.topReasons) set(r.count, { reason: r.reason });
  });
  gauge('trawl_page_error_codes', 'Recorded pages by error code.', ['code'], (s, set) => {
    for (const e of s.outcomes.errorCodes) set(e.pages, { code: e.code });
  });
  gauge('trawl_recrawl_deadline_miss_ratio', 'Share of the last day\'s re-crawls that came after their due time + 5 min.', [], (s, set) => set(s.recrawl.deadlineMissRate));
  gauge('trawl_recrawl_overdue_pages', 'Pages past their re-crawl due time.', [], (s, set) => set(s.recrawl.overdue));
  gauge('trawl_schedulers', 'Live schedulers.', [], (s, set) => set(s.schedulers.length));
  gauge('trawl_workers', 'Fetch consumers connected to partition 0.', [], (s, set) => set(s.workers));
  gauge('trawl_db_urls', 'Known URLs by state (PostgreSQL).', ['state'], (s, set) => {
    for (const [state, n] of Object.entries(s.db.urls)) set(n, { state });
  });
  gauge('trawl_db_pages', 'Recorded pages (PostgreSQL).', [], (s, set) => set(s.db.pages));
  gauge('trawl_host_queued_urls', `Queued URLs of the top ${config.metrics.topHosts} hosts by queued URLs (of a sample).`, ['host'], (s, set) => {
    for (const h of s.topHosts) set(h.queued, { host: h.host });
  });
  gauge('trawl_host_delay_seconds', `Delay in force for the top ${config.metrics.topHosts} hosts by queued URLs.`, ['host'], (s, set) => {
    for (const h of s.topHosts) set(h.delayMs / 1000, { host: h.host });
  });
  return metrics;
}
