import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { dropNamespace, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

// Workers and schedulers serve Prometheus /metrics and /healthz on TRAWL_METRICS_PORT.
const namespace = uniqueNamespace('metrics');
const TOKEN = `metrics-${randomUUID()}`;
afterAll(() => dropNamespace(namespace));

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

describe('the metrics listener of workers and schedulers', () => {
  it.each(['worker', 'scheduler'])('%s: /healthz open, /metrics behind a token, SIGTERM exits 0', async (role) => {
    const port = await freePort();
    const proc = trawl([role], { TRAWL_NAMESPACE: namespace, TRAWL_METRICS_PORT: String(port), TRAWL_API_TOKENS: TOKEN });
    try {
      const base = `http://127.0.0.1:${port}`;
      await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => null))?.status === 200, 30_000, `${role} /healthz`);
      expect((await fetch(`${base}/metrics`)).status).toBe(401);
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('# TYPE trawl_pipeline_events_total counter');
      expect(text).toMatch(new RegExp(`^process_cpu_seconds_total\\{namespace="${namespace}",role="${role}"\\} `, 'm'));
      if (role === 'scheduler') {
        // Seed admission once the scheduler has started: the default threshold is one worker's
        // polite day (32 fetch slots × 86,400 s at TRAWL_MIN_DELAY_MS=1000), and seeds flow.
        const scrape = async () => (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
        await waitFor(async () => /^trawl_frontier_max_queued\{[^}]*\} 2764800$/m.test(await scrape()), 30_000, 'the seed admission series');
        const admission = await scrape();
        expect(admission).toMatch(/^trawl_frontier_resume_below\{[^}]*\} 2488320$/m);
        expect(admission).toMatch(/^trawl_seed_admission_paused\{[^}]*\} 0$/m);
      }
    } finally {
      proc.child.kill('SIGTERM');
    }
    const { code } = await proc.exited;
    expect(code, proc.stderr()).toBe(0);
    expect(proc.stderr()).not.toContain(TOKEN);
  }, 60_000);
});
