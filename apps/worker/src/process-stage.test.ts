import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@trawl/config';
import { RecentBodies } from '@trawl/crawl/process';
import { dropNamespace } from '@trawl/runtime/testing';
import { Runtime } from '@trawl/runtime';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { createProcessStage } from './process-stage.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const namespace = `t_procstage_${randomBytes(4).toString('hex')}`;
const repo = fileURLToPath(new URL('../../..', import.meta.url));

afterAll(async () => {
  await dropNamespace(namespace, { redisUrl: REDIS_URL, databaseUrl: DATABASE_URL });
});

/**
 * The module URLs a fresh Node process loads for each step of `steps` (module specifiers, imported
 * in turn), as a load hook of the ESM loader sees them: every ES module, and the entry module of
 * each CommonJS package imported from one.
 */
function loadedBy(steps: readonly string[]): string[][] {
  const hooks = [
    'let port;',
    'export async function initialize(data) { port = data.port; }',
    'export async function load(url, context, next) { port.postMessage(url); return next(url, context); }',
  ].join('\n');
  const script = [
    "import { register } from 'node:module';",
    "import { MessageChannel } from 'node:worker_threads';",
    'const { port1, port2 } = new MessageChannel();',
    'let seen = [];',
    'port1.on("message", (url) => seen.push(url));',
    `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), { data: { port: port2 }, transferList: [port2] });`,
    'const steps = [];',
    `for (const specifier of ${JSON.stringify(steps)}) {`,
    '  await import(specifier);',
    '  await new Promise((resolve) => setTimeout(resolve, 200));',
    '  steps.push(seen);',
    '  seen = [];',
    '}',
    'port1.close();',
    'console.log(JSON.stringify(steps));',
  ].join('\n');
  const child = spawnSync(process.execPath, ['--conditions=trawl-source', '--import', 'tsx', '--input-type=module', '-e', script], { cwd: repo, encoding: 'utf8', timeout: 60_000 });
  expect(child.error).toBeUndefined();
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout.trim()) as string[][];
}

/** The fetch stage's (HTTP client, BullMQ, browser) and the analysis thread's (HTML parser, language detection). */
const NOT_THE_PROCESS_STAGES = /\/node_modules\/(got|bullmq|http2-wrapper|playwright-core|htmlparser2|entities|franc-min)\//;

describe('the process stage alone', () => {
  it('loads no HTTP client, no BullMQ and no HTML parser; the fetch stage loads the first two, the analysis thread the parser', () => {
    const [processStage = [], wholeWorker = [], analysis = []] = loadedBy([
      // What a process thread composes its stage from.
      `${repo}apps/worker/src/process-stage.ts`,
      // Then the rest of the worker (both stages, dispatch membership, rendering).
      '@trawl/worker',
      // Then what the analysis thread runs.
      '@trawl/crawl/analyze',
    ]);
    expect(processStage.some((url) => url.includes('/libs/frontier/src/'))).toBe(true);
    expect(processStage.some((url) => url.includes('/node_modules/ioredis/'))).toBe(true);
    expect(processStage.filter((url) => NOT_THE_PROCESS_STAGES.test(url))).toEqual([]);
    expect(wholeWorker.some((url) => url.includes('/node_modules/got/'))).toBe(true);
    expect(wholeWorker.some((url) => url.includes('/node_modules/bullmq/'))).toBe(true);
    expect(analysis.some((url) => url.includes('/node_modules/htmlparser2/'))).toBe(true);
  }, 90_000);

  it('runs on a runtime that refuses the fetch stage\'s parts, and stops drained', async () => {
    const config = loadConfig({ env: { TRAWL_NAMESPACE: namespace } });
    const full = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
    expect(full.queues).toBeDefined();
    await full.close();

    const runtime = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'process', processStageOnly: true });
    try {
      expect(() => runtime.queues).toThrow(/no fetch queues/);
      expect(() => runtime.fetcher).toThrow(/no HTTP client/);
      const fatal: unknown[] = [];
      const stages = createProcessStage(runtime, { bodies: new RecentBodies(), onFatal: (error) => fatal.push(error) });
      expect(stages.fetch).toBeNull();
      expect(stages.process).not.toBeNull();
      stages.start();
      await stages.ready();
      expect(await stages.stop(5_000)).toEqual({ drained: true });
      expect(fatal).toEqual([]);
    } finally {
      await runtime.close();
    }
  }, 60_000);
});
