import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ThreadCalls } from './thread-calls.js';

// Doubles a number; 'boom' is an error with a code; 'die' kills the thread; 'slow' takes 50 ms of the thread.
const SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ id, input }) => {
  if (input === 'die') process.exit(3);
  if (input === 'slow') { const until = Date.now() + 50; while (Date.now() < until); parentPort.postMessage({ id, result: 0 }); return; }
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

  it('with a window, keeps at most that many calls in the thread and lets urgent calls go ahead of waiting ones', async () => {
    const calls = new ThreadCalls<number | string, number>({ spawn: () => new Worker(SOURCE, { eval: true, execArgv: [] }), window: 1 });
    const order: string[] = [];
    const track = (name: string, call: Promise<number>) => call.then((result) => void order.push(`${name}=${result}`));
    try {
      // 'slow' fills the window; 1, 2 and 3 wait; 4 and 5 are urgent and go in before them, in their own order.
      const all = [
        track('slow', calls.call('slow')),
        track('1', calls.call(1)),
        track('2', calls.call(2)),
        track('4', calls.call(4, { urgent: true })),
        track('3', calls.call(3)),
        track('5', calls.call(5, { urgent: true })),
      ];
      await Promise.all(all);
      expect(order).toEqual(['slow=0', '4=8', '5=10', '1=2', '2=4', '3=6']);
      // A dying thread rejects the calls in it and those waiting for room; the next call starts a new one.
      const dying = [calls.call('die'), calls.call(6), calls.call(7, { urgent: true })];
      const settled = await Promise.allSettled(dying);
      expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(await calls.call(8, { urgent: true })).toBe(16);
    } finally {
      await calls.close();
    }
  });
});
