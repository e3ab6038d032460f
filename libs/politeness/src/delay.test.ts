import { describe, expect, it } from 'vitest';
import { baseDelayMs, DEFAULT_POLITENESS, hostDelayMs, type PolitenessOptions, rememberResponseMs, responseSignalMs, responseTimeMs } from './delay.js';
import { HEALTHY, type HostHealth } from './health.js';

// The numbers every table below assumes, pinned here whatever the defaults become.
const delays = { minDelayMs: 1000, crawlDelayFloorMs: 250, maxCrawlDelayMs: 30_000, forceDelay: false, maxDelayMs: 60_000 };
const options: PolitenessOptions = { ...DEFAULT_POLITENESS, ...delays, adaptiveFactor: 5, adaptiveResponseCapMs: 5000, adaptiveSamples: 3 };
const forced: PolitenessOptions = { ...options, forceDelay: true };
const backedOff = (backoffMs: number): HostHealth => ({ streak: 2, backoffMs });

describe('hostDelayMs', () => {
  it.each<[string, PolitenessOptions, number | null, HostHealth, number | null, number[] | undefined, number]>([
    // Crawl-delay semantics.
    ['no Crawl-delay: the configured delay', options, null, HEALTHY, null, undefined, 1000],
    ['Crawl-delay 0 states none: the configured delay', options, 0, HEALTHY, null, undefined, 1000],
    ['a shorter Crawl-delay replaces the configured delay', options, 500, HEALTHY, null, undefined, 500],
    ['a longer Crawl-delay replaces it too', options, 2500, HEALTHY, null, undefined, 2500],
    ['a Crawl-delay below the floor is raised to it', options, 100, HEALTHY, null, undefined, 250],
    ['a Crawl-delay above the cap is cut to it', options, 45_000, HEALTHY, null, undefined, 30_000],
    ['force: a shorter Crawl-delay does not lower the configured delay', forced, 500, HEALTHY, null, undefined, 1000],
    ['force: a longer Crawl-delay still lengthens it', forced, 2500, HEALTHY, null, undefined, 2500],
    ['force: no Crawl-delay', forced, null, HEALTHY, null, undefined, 1000],
    ['force: the cap still applies', forced, 45_000, HEALTHY, null, undefined, 30_000],
    // Adaptive term on top.
    ['a fast response keeps the Crawl-delay', options, 500, HEALTHY, 50, undefined, 500],
    ['5 × a slow response on top of a Crawl-delay', options, 500, HEALTHY, 300, undefined, 1500],
    ['5 × a slow response on top of the configured delay (Heritrix)', options, null, HEALTHY, 800, undefined, 4000],
    ['one response counts at most the response cap', options, null, HEALTHY, 60_000, undefined, 25_000],
    ['one slow response among fast ones changes nothing', options, 500, HEALTHY, 30_000, [50, 60], 500],
    ['two slow responses of three slow the host', options, 500, HEALTHY, 4000, [4000, 50], 20_000],
    ['only the last few responses count', options, null, HEALTHY, 50, [9000, 9000, 9000, 50], 1000],
    ['two responses known: the faster counts', options, null, HEALTHY, 3000, [400], 2000],
    ['no response this time: the host\'s recent ones still count', options, null, HEALTHY, null, [2000, 3000], 10_000],
    ['no response at all: no adaptive term', options, null, HEALTHY, null, undefined, 1000],
    // Back-off on top.
    ['back-off on top of a Crawl-delay', options, 500, backedOff(5000), 50, undefined, 5000],
    ['back-off on top of a forced delay', forced, 500, backedOff(3000), null, undefined, 3000],
    ['the largest term wins', options, 7000, backedOff(5000), 1000, undefined, 7000],
    ['capped at the maximum delay', options, null, backedOff(600_000), null, undefined, 60_000],
  ])('%s', (_name, opts, crawlDelayMs, health, lastResponseMs, earlierResponseMs, expected) => {
    expect(hostDelayMs({ crawlDelayMs, health, lastResponseMs, earlierResponseMs }, opts)).toBe(expected);
  });

  it('has no adaptive term with factor 0', () => {
    expect(hostDelayMs({ crawlDelayMs: null, health: HEALTHY, lastResponseMs: 5000, earlierResponseMs: [5000, 5000] }, { ...options, adaptiveFactor: 0 })).toBe(1000);
  });

  it('with one sample, the last response (capped) alone counts', () => {
    const one = { ...options, adaptiveSamples: 1 };
    expect(hostDelayMs({ crawlDelayMs: null, health: HEALTHY, lastResponseMs: 2000, earlierResponseMs: [10, 10] }, one)).toBe(10_000);
    expect(hostDelayMs({ crawlDelayMs: null, health: HEALTHY, lastResponseMs: 10, earlierResponseMs: [4000, 4000] }, one)).toBe(1000);
  });

  it('a floor above the cap wins (both are settings; the floor is the politer)', () => {
    expect(baseDelayMs(100, { ...options, crawlDelayFloorMs: 5000, maxCrawlDelayMs: 2000 })).toBe(5000);
  });
});

describe('responseSignalMs', () => {
  it.each<[string, number[], number | null, number]>([
    ['nothing known', [], null, 0],
    ['one sample', [], 700, 700],
    ['lower median of two', [900], 100, 100],
    ['median of three', [100, 5000], 300, 300],
    ['capped before the median', [8000, 9000], 7000, 5000],
    ['negative times count as 0', [], -5, 0],
    ['only the last three', [1, 2, 3000, 4000], 5000, 4000],
  ])('%s', (_name, earlier, last, expected) => {
    expect(responseSignalMs(earlier, last, options)).toBe(expected);
  });
});

describe('rememberResponseMs', () => {
  it.each<[string, number, number[], number | null, number[]]>([
    ['keeps the last samples − 1', 3, [10, 20], 30, [20, 30]],
    ['starts from nothing', 3, [], 30, [30]],
    ['a fetch without a response adds nothing', 3, [10, 20], null, [10, 20]],
    ['one sample keeps nothing', 1, [10], 30, []],
    ['a longer window', 5, [1, 2, 3], 4, [1, 2, 3, 4]],
  ])('%s', (_name, samples, earlier, last, expected) => {
    expect(rememberResponseMs(earlier, last, { ...options, adaptiveSamples: samples })).toEqual(expected);
  });

  const delaysFor = (responses: number[]): number[] => {
    let earlier: number[] = [];
    return responses.map((last) => {
      const delay = hostDelayMs({ crawlDelayMs: 500, health: HEALTHY, lastResponseMs: last, earlierResponseMs: earlier }, options);
      earlier = rememberResponseMs(earlier, last, options);
      return delay;
    });
  };

  it('feeds hostDelayMs the window it needs: a slow answer now and then never slows the host', () => {
    expect(delaysFor([40, 50, 60_000, 45, 55, 60_000, 50])).toEqual([500, 500, 500, 500, 500, 500, 500]);
  });

  it('a host that turns slow is slowed from its second slow answer', () => {
    expect(delaysFor([40, 3000, 3000, 3000])).toEqual([500, 500, 15_000, 15_000]);
  });
});

describe('responseTimeMs', () => {
  it.each<[string, { startedAt: number; firstByteAt: number | null; endedAt: number }, number]>([
    ['to the response headers', { startedAt: 1000, firstByteAt: 1120, endedAt: 61_000 }, 120],
    ['the whole fetch when the headers\' time is unknown', { startedAt: 1000, firstByteAt: null, endedAt: 1900 }, 900],
    ['never negative', { startedAt: 1000, firstByteAt: 990, endedAt: 1000 }, 0],
  ])('%s', (_name, timing, expected) => {
    expect(responseTimeMs(timing)).toBe(expected);
  });
});
