import type { RequestLogEntry } from '@trawl/testweb';
import { describe, expect, it } from 'vitest';
import { quietFrom, silenceAround } from './chaos.js';

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
