import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import type { Config } from '@trawl/config';
import { describeError } from '@trawl/core';
import type { CounterName } from '@trawl/model';
import { RecentBodies } from '@trawl/crawl/process';
import { Runtime } from '@trawl/runtime';
import { createLogger } from '@trawl/telemetry';
import { createProcessStage } from './process-stage.js';
import { type FromProcessThread, toProcessThread } from './process-thread-messages.js';

/**
 * A worker's process stage on a thread of its own (see `ProcessThread`): its own runtime (Redis
 * and PostgreSQL connections, counters), reading every partition's process stream like any other
 * process stage. The bodies the fetch stage just stored arrive as messages, so it reads them
 * without the store; its counts go to Redis itself and, every half second, to the main thread
 * for the process's metrics.
 */
const data = z
  .object({ config: z.custom<Config>((v) => typeof v === 'object' && v !== null), redisUrl: z.string(), databaseUrl: z.string(), logLevel: z.string() })
  .parse((workerData as { data: unknown }).data);
const port = parentPort;
if (!port) throw new Error('process-thread.ts runs as a worker thread');
const post = (message: FromProcessThread) => port.postMessage(message);

const logger = createLogger({ level: data.logLevel, name: 'worker', base: { thread: 'process' } });
const bodies = new RecentBodies();
let stopRequested: ((timeoutMs: number) => void) | null = null;
const stopAsked = new Promise<number>((resolve) => (stopRequested = resolve));

port.on('message', (raw: unknown) => {
  const message = toProcessThread.safeParse(raw);
  if (!message.success) {
    logger.warn({ issues: message.error.issues.length }, 'process thread: a message it does not know, ignored');
    return;
  }
  if (message.data.kind === 'body') {
    // The bytes were moved to this thread: wrap them, not copy them.
    const { bytes } = message.data;
    bodies.put(message.data.key, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } else stopRequested?.(message.data.timeoutMs);
});

async function run(): Promise<void> {
  // Only what the process stage uses is loaded: no HTTP client, no BullMQ (see processStageOnly).
  const runtime = await Runtime.open({ config: data.config, redisUrl: data.redisUrl, databaseUrl: data.databaseUrl, logger, role: 'process', processStageOnly: true });
  const counts = new Map<CounterName, number>();
  const unsubscribe = runtime.counters.observe((name, by) => counts.set(name, (counts.get(name) ?? 0) + by));
  const sendCounts = () => {
    if (counts.size === 0) return;
    post({ kind: 'counts', counts: Object.fromEntries(counts) });
    counts.clear();
  };
  const ticker = setInterval(sendCounts, 500);
  try {
    const stages = createProcessStage(runtime, { bodies, onFatal: (error) => post({ kind: 'fatal', message: error.message, code: error.code }) });
    stages.start();
    await stages.ready();
    post({ kind: 'started' });
    const timeoutMs = await stopAsked;
    const { drained } = await stages.stop(timeoutMs);
    sendCounts();
    post({ kind: 'stopped', drained });
  } finally {
    clearInterval(ticker);
    unsubscribe();
    await runtime.close();
  }
}

run().catch((error: unknown) => {
  logger.error({ err: error }, 'process thread failed');
  post({ kind: 'fatal', message: describeError(error), code: null });
});
