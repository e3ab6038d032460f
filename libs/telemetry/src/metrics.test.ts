import { afterAll, describe, expect, it } from 'vitest';
import { type AdmissionReading, admissionMetrics, Metrics, pipelineEvents, startMetricsServer } from './metrics.js';
import { silentLogger } from './index.js';

describe('Metrics and the metrics listener', () => {
  const metrics = new Metrics({ role: 'worker', namespace: 't_metrics' });
  const events = pipelineEvents(metrics);
  let queued = 7;
  metrics.gauge('trawl_test_queued_urls', 'Queued URLs (test).', [], (g) => g.set(queued));
  const servers: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it('serves /metrics with default labels, process metrics and collected gauges, behind authorization', async () => {
    const server = await startMetricsServer({ host: '127.0.0.1', port: 0, metrics, authorize: (h) => h === 'Bearer good-token-0123456789', logger: silentLogger });
    servers.push(server);
    events.inc({ event: 'fetched' }, 3);
    queued = 9;
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer bad' } })).status).toBe(401);
    const res = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer good-token-0123456789' } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('trawl_pipeline_events_total{event="fetched",namespace="t_metrics",role="worker"} 3');
    expect(text).toContain('trawl_test_queued_urls{namespace="t_metrics",role="worker"} 9');
    expect(text).toMatch(/^process_cpu_seconds_total\{/m);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect((await fetch(`${base}/other`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});

describe('admissionMetrics', () => {
  it('shows the threshold, the resume mark and whether seeds are paused, and 0 before the first decision', async () => {
    const metrics = new Metrics({ role: 'scheduler', namespace: 't_admission' });
    let reading: AdmissionReading | undefined;
    admissionMetrics(metrics, () => reading);
    expect(await metrics.text()).toContain('trawl_seed_admission_paused{namespace="t_admission",role="scheduler"} 0');
    reading = { state: 'paused', queued: 1200, maxQueued: 1000, resumeBelow: 900 };
    let text = await metrics.text();
    expect(text).toContain('trawl_seed_admission_paused{namespace="t_admission",role="scheduler"} 1');
    expect(text).toContain('trawl_frontier_max_queued{namespace="t_admission",role="scheduler"} 1000');
    expect(text).toContain('trawl_frontier_resume_below{namespace="t_admission",role="scheduler"} 900');
    reading = { ...reading, state: 'admitting', queued: 10 };
    text = await metrics.text();
    expect(text).toContain('trawl_seed_admission_paused{namespace="t_admission",role="scheduler"} 0');
  });
});
