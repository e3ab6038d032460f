import { readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { startModuleThread } from './module-thread.js';

// A module that reports the OS priority of the thread it runs on.
const REPORTER = new URL(
  `data:text/javascript,${encodeURIComponent("import { parentPort } from 'node:worker_threads'; import { getPriority } from 'node:os'; parentPort.postMessage({ nice: getPriority() });")}`,
);

/** What the thread reports under `key` (its priority, its name), once its module has loaded. */
function reported<K extends 'nice' | 'name'>(thread: Worker, key: K): Promise<K extends 'nice' ? number : string> {
  return new Promise((resolve, reject) => {
    let value: unknown = null;
    thread.on('message', (message: { nice?: number; name?: string; ready?: true; failed?: string }) => {
      if (message[key] !== undefined) value = message[key];
      else if (message.failed) reject(new Error(message.failed));
      else if (message.ready && value !== null) resolve(value as K extends 'nice' ? number : string);
    });
    thread.once('error', reject);
  });
}

describe.runIf(process.platform === 'linux')('startModuleThread: the thread\'s OS priority', () => {
  it('runs the module at the nice value given, leaving the calling thread as it was', async () => {
    const before = getPriority();
    const thread = startModuleThread(REPORTER, null, { nice: Math.max(before, 7) });
    try {
      expect(await reported(thread, 'nice')).toBe(Math.max(before, 7));
      expect(getPriority()).toBe(before);
    } finally {
      await thread.terminate();
    }
  });

  it('keeps the process\'s priority without a nice value', async () => {
    const thread = startModuleThread(REPORTER);
    try {
      expect(await reported(thread, 'nice')).toBe(getPriority());
    } finally {
      await thread.terminate();
    }
  });
});

// A module that reports the OS name of the thread it runs on.
const NAME_REPORTER = new URL(
  `data:text/javascript,${encodeURIComponent("import { parentPort } from 'node:worker_threads'; import { readFileSync } from 'node:fs'; parentPort.postMessage({ name: readFileSync('/proc/thread-self/comm', 'utf8').trim() });")}`,
);

describe.runIf(process.platform === 'linux')('startModuleThread: the thread\'s OS name', () => {
  const own = () => readFileSync('/proc/thread-self/comm', 'utf8').trim();

  it('names the thread as given (cut to the 15 bytes Linux keeps), leaving the calling thread\'s name', async () => {
    const before = own();
    const thread = startModuleThread(NAME_REPORTER, null, { name: 'trawl-analysis-and-more' });
    try {
      expect(await reported(thread, 'name')).toBe('trawl-analysis-');
      expect(own()).toBe(before);
    } finally {
      await thread.terminate();
    }
  });

  it('leaves the name it inherits without one', async () => {
    const thread = startModuleThread(NAME_REPORTER);
    try {
      expect(await reported(thread, 'name')).not.toMatch(/^trawl-/);
    } finally {
      await thread.terminate();
    }
  });
});
