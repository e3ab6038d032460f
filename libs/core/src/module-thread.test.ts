import { readFileSync } from 'node:fs';
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

// A module that reports the OS name of the thread it runs on.
const NAME_REPORTER = new URL(
  `data:text/javascript,${encodeURIComponent("import { parentPort } from 'node:worker_threads'; import { readFileSync } from 'node:fs'; parentPort.postMessage({ name: readFileSync('/proc/thread-self/comm', 'utf8').trim() });")}`,
);

/** What the thread says its OS name is, once its module has loaded. */
function reportedName(thread: Worker): Promise<string> {
  return new Promise((resolve, reject) => {
    let name: string | null = null;
    thread.on('message', (message: { name?: string; ready?: true; failed?: string }) => {
      if (message.name !== undefined) name = message.name;
      else if (message.failed) reject(new Error(message.failed));
      else if (message.ready && name !== null) resolve(name);
    });
    thread.once('error', reject);
  });
}

describe.runIf(process.platform === 'linux')('startModuleThread: the thread\'s OS name', () => {
  const own = () => readFileSync('/proc/thread-self/comm', 'utf8').trim();

  it('names the thread as given (cut to the 15 bytes Linux keeps), leaving the calling thread\'s name', async () => {
    const before = own();
    const thread = startModuleThread(NAME_REPORTER, null, { name: 'trawl-analysis-and-more' });
    try {
      expect(await reportedName(thread)).toBe('trawl-analysis-');
      expect(own()).toBe(before);
    } finally {
      await thread.terminate();
    }
  });

  it('leaves the name it inherits without one', async () => {
    const thread = startModuleThread(NAME_REPORTER);
    try {
      expect(await reportedName(thread)).not.toMatch(/^trawl-/);
    } finally {
      await thread.terminate();
    }
  });
});
