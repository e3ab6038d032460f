import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { silentLogger } from '@trawl/telemetry';
import { TestWeb } from '@trawl/testweb';
import { afterAll, describe, expect, it } from 'vitest';
import { Runtime } from '@trawl/runtime';
import { runCrawl } from '../src/crawl.js';
import { resolveServices } from '../src/services.js';

/**
 * The embedded default, as a newcomer without Redis or PostgreSQL meets it: nothing answers on
 * the local ports, so trawl starts a private redis-server and PGlite under its data directory —
 * and a small crawl completes on them.
 */
const dir = mkdtempSync(join(tmpdir(), 'trawl-embedded-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('embedded default', () => {
  it('starts redis-server and PGlite when nothing answers, and crawls on them', async () => {
    const config = loadConfig({
      env: { TRAWL_NAMESPACE: 'embedded', TRAWL_MIN_DELAY_MS: '20', TRAWL_CONTENT_DIR: join(dir, 'content'), TRAWL_ALLOW_NETWORKS: '127.0.0.0/8' },
    });
    const services = await resolveServices(config, {
      dataDir: dir,
      logger: silentLogger,
      allowEmbedded: true,
      local: { redisUrl: 'redis://127.0.0.1:1', postgresAdminUrl: 'postgres://postgres@127.0.0.1:1/postgres', postgresUrl: 'postgres://postgres@127.0.0.1:1/trawl' },
    });
    const web = await TestWeb.start({ hosts: 3, pagesPerHost: 5, linksPerPage: 2, crossHostLinks: 1, seed: 3 });
    try {
      expect(services.embedded.sort()).toEqual(['postgres', 'redis']);
      expect(services.redisUrl).not.toBe('redis://127.0.0.1:1');
      const runtime = await Runtime.open({ config, redisUrl: services.redisUrl, databaseUrl: services.databaseUrl, logger: silentLogger, role: 'test' });
      try {
        const summary = await runCrawl(runtime, { seeds: web.rootUrls(), concurrency: 4 });
        expect(summary.finished).toBe('complete');
        expect(summary.fetched).toBe(15);
        expect((await runtime.db.counts()).pages).toBe(15);
      } finally {
        await runtime.close();
      }
    } finally {
      await web.stop();
      await services.stop();
    }
  }, 120_000);

  it('refuses to start embedded servers where they are not allowed (a worker must join a shared crawl)', async () => {
    const config = loadConfig({ env: {} });
    await expect(
      resolveServices(config, {
        dataDir: dir,
        logger: silentLogger,
        allowEmbedded: false,
        local: { redisUrl: 'redis://127.0.0.1:1', postgresAdminUrl: 'postgres://postgres@127.0.0.1:1/postgres', postgresUrl: 'postgres://postgres@127.0.0.1:1/trawl' },
      }),
    ).rejects.toThrow(/REDIS_URL is not set/);
  });
});
