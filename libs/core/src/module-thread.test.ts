import { readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
import { startModuleThread } from './module-thread.js';

// A module that reports the OS priority and the OS name of the thread it runs on.
const REPORTER = new URL(
  `data:text/javascript,${encodeURIComponent(
    "import { parentPort } from 'node:worker_threads'; import { getPriority } from 'node:os'; import { readFileSync } from 'node:fs'; parentPort.postMessage({ report: { nice: getPriority(), name: readFileSync('/proc/thread-self/comm', 'utf8').trim() } });",
  )}`,
);

interface ThreadReport {
  nice: number;
  name: string;
}

/** What a thread started with `options` reports about itself once its module has loaded; the thread is stopped after. */
async function reportOf(options?: Parameters<typeof startModuleThread>[2]): Promise<ThreadReport> {
  const thread = startModuleThread(REPORTER, null, options);
  try {
    return await new Promise<ThreadReport>((resolve, reject) => {
      let report: ThreadReport | null = null;
      thread.on('message', (message: { report?: ThreadReport; ready?: true; failed?: string }) => {
        if (message.report) report = message.report;
        else if (message.failed) reject(new Error(message.failed));
        else if (message.ready && report !== null) resolve(report);
      });
      thread.once('error', reject);
    });
  } finally {
    await thread.terminate();
  }
}

describe.runIf(process.platform === 'linux')('startModuleThread: the thread\'s OS priority', () => {
  it('runs the module at the nice value given, leaving the calling thread as it was', async () => {
    const before = getPriority();
    expect((await reportOf({ nice: Math.max(before, 7) })).nice).toBe(Math.max(before, 7));
    expect(getPriority()).toBe(before);
  });

  it('keeps the process\'s priority without a nice value', async () => {
    expect((await reportOf()).nice).toBe(getPriority());
  });
});

describe.runIf(process.platform === 'linux')('startModuleThread: the thread\'s OS name', () => {
  const own = () => readFileSync('/proc/thread-self/comm', 'utf8').trim();

  it('names the thread as given (cut to the 15 bytes Linux keeps), leaving the calling thread\'s name', async () => {
    const before = own();
    expect((await reportOf({ name: 'trawl-analysis-and-more' })).name).toBe('trawl-analysis-');
    expect(own()).toBe(before);
  });

  it('leaves the name it inherits without one', async () => {
    expect((await reportOf()).name).not.toMatch(/^trawl-/);
  });
});
