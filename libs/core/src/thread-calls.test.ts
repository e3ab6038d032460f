import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ThreadCalls } from './thread-calls.js';

// Doubles a number; 'boom' is an error with a code; 'die' kills the thread.
const SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ id, input }) => {
  if (input === 'die') process.exit(3);
  if (input === 'boom') parentPort.postMessage({ id, error: { message: 'no space', code: 'ENOSPC' } });
  else parentPort.postMessage({ id, result: input * 2 });
});
`;

describe('ThreadCalls', () => {
  it('answers calls, keeps error codes, rejects the calls of a dead thread and starts a new one', async () => {
    let spawned = 0;
    const deaths: string[] = [];
    const calls = new ThreadCalls<number | string, number>({
      spawn: () => {
        spawned += 1;
        return new Worker(SOURCE, { eval: true, execArgv: [] });
      },
      onDeath: (error) => deaths.push(error.message),
    });
    try {
      expect(await Promise.all([1, 2, 3].map((n) => calls.call(n)))).toEqual([2, 4, 6]);
      await expect(calls.call('boom')).rejects.toMatchObject({ message: 'no space', code: 'ENOSPC' });
      await expect(calls.call('die')).rejects.toThrow('the thread exited (code 3)');
      expect(deaths).toEqual(['the thread exited (code 3)']);
      expect(calls.running).toBe(false);
      expect(await calls.call(21)).toBe(42);
      expect(spawned).toBe(2);
    } finally {
      await calls.close();
    }
  });
});
