import type { RequestLogEntry } from '@trawl/testweb';
import { describe, expect, it } from 'vitest';
import { quietFrom, silenceAround, worstWaitAcross } from './chaos.js';

const at = (start: number) => ({ start }) as RequestLogEntry;

describe('the chaos harness: the silence a fault caused, from the web log', () => {
  // Requests every 100 ms; a wipe at 1000; in-flight requests still logged at 1050 and 1900 (a
  // loaded server logs late); then nothing until the rebuild's crawl resumes at 6000.
  const log = [...[0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1050, 1900].map(at), ...[6000, 6100, 6200].map(at)];

  it('is the longest gap that ends after the fault and begins within the window', () => {
    expect(silenceAround(log, 1000)).toBe(4100);
    // A gap that began before the window ends is still the fault's; one that ends before it is not.
    expect(silenceAround(log, 5500)).toBe(4100);
    expect(silenceAround(log, 7000)).toBe(0);
  });

  it('began with the last request before it: what the server logged until then was in flight at the fault', () => {
    expect(quietFrom(log, 1000)).toBe(1900);
    expect(quietFrom([], 1000)).toBe(1000);
  });
});

describe('the chaos harness: the worst wait past due across a fault', () => {
  const entry = (host: string, start: number, end: number) => ({ host, start, end }) as RequestLogEntry;
  // Delay 100 ms. Host a: polite before and after the kill at 1000; host b: its response ended at
  // 950 and its next request came at 4050 (3 s past due); host c: nothing after the kill.
  const log = [entry('a', 800, 850), entry('a', 950, 1000), entry('a', 1100, 1150), entry('b', 900, 950), entry('b', 4050, 4100), entry('c', 900, 950)];

  it('is the longest end-to-next-request gap over the hosts whose wait spans the moment, less the delay', () => {
    expect(worstWaitAcross(log, 1000, 100)).toEqual({ host: 'b', waitMs: 3000 });
    // Before every request, or after the last one of each host: no host's wait spans it.
    expect(worstWaitAcross(log, 0, 100)).toEqual({ host: '', waitMs: 0 });
    expect(worstWaitAcross(log, 5000, 100)).toEqual({ host: '', waitMs: 0 });
  });
});
