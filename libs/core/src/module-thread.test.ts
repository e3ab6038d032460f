import { getPriority } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { startModuleThread } from './module-thread.js';

// A module that reports the OS priority of the thread it runs on.
const REPORTER = new URL(
  `data:text/javascript,${encodeURIComponent("import { parentPort } from 'node:worker_threads'; import { getPriority } from 'node:os'; parentPort.postMessage({ nice: getPriority() });")}`,
);

/** What the thread says about its priority, once its module has loaded. */
function reported(thread: Worker): Promise<number> {
  return new Promise((resolve, reject) => {
    let nice: number | null = null;
    thread.on('message', (message: { nice?: number; ready?: true; failed?: string }) => {
      if (message.nice !== undefined) nice = message.nice;
      else if (message.failed) reject(new Error(message.failed));
      else if (message.ready && nice !== null) resolve(nice);
    });
    thread.once('error', reject);
  });
}

describe.runIf(process.platform === 'linux')('startModuleThread: the thread\'s OS priority', () => {
  it('runs the module at the nice value given, leaving the calling thread as it was', async () => {
    const before = getPriority();
    const thread = startModuleThread(REPORTER, null, { nice: Math.max(before, 7) });
    try {
      expect(await reported(thread)).toBe(Math.max(before, 7));
      expect(getPriority()).toBe(before);
    } finally {
      await thread.terminate();
    }
  });

  it('keeps the process\'s priority without a nice value', async () => {
    const thread = startModuleThread(REPORTER);
    try {
      expect(await reported(thread)).toBe(getPriority());
    } finally {
      await thread.terminate();
    }
  });
});
