import { describe, expect, it } from 'vitest';
import { DEFAULT_POLITENESS, type PolitenessOptions } from './delay.js';
import { type DelayReason, explainDelay } from './explain.js';

const options = (o: Partial<PolitenessOptions> = {}): PolitenessOptions => ({ ...DEFAULT_POLITENESS, ...o });
const healthy = { streak: 0, backoffMs: 0 };

describe('explainDelay', () => {
  it.each<[string, Parameters<typeof explainDelay>[0], Partial<PolitenessOptions>, number, DelayReason]>([
    ['no Crawl-delay, no trouble: the configured delay', { crawlDelayMs: null, health: healthy, lastResponseMs: 10 }, {}, 1000, 'default'],
    ['a Crawl-delay replaces it', { crawlDelayMs: 3000, health: healthy, lastResponseMs: 10 }, {}, 3000, 'crawl-delay'],
    ['a short Crawl-delay is raised to the floor, still the Crawl-delay', { crawlDelayMs: 100, health: healthy, lastResponseMs: 10 }, {}, 250, 'crawl-delay'],
    ['forced: a shorter Crawl-delay leaves the configured delay', { crawlDelayMs: 500, health: healthy, lastResponseMs: 10 }, { forceDelay: true }, 1000, 'default'],
    ['forced: a longer Crawl-delay still wins', { crawlDelayMs: 2000, health: healthy, lastResponseMs: 10 }, { forceDelay: true }, 2000, 'crawl-delay'],
    ['Crawl-delay 0 states none', { crawlDelayMs: 0, health: healthy, lastResponseMs: null }, {}, 1000, 'default'],
    ['back-off above the base', { crawlDelayMs: null, health: { streak: 2, backoffMs: 10_000 }, lastResponseMs: 10 }, {}, 10_000, 'backoff'],
    ['a slow host: the adaptive term', { crawlDelayMs: null, health: healthy, lastResponseMs: 400 }, {}, 2000, 'adaptive'],
    ['a tie between base and back-off goes to the base', { crawlDelayMs: null, health: { streak: 1, backoffMs: 1000 }, lastResponseMs: null }, {}, 1000, 'default'],
    ['beyond the maximum delay: capped', { crawlDelayMs: null, health: { streak: 9, backoffMs: 600_000 }, lastResponseMs: null }, {}, 60_000, 'capped'],
  ])('%s', (_name, input, o, delayMs, reason) => {
    const explained = explainDelay(input, options(o));
    expect(explained.delayMs).toBe(delayMs);
    expect(explained.reason).toBe(reason);
  });

  it('reports every term', () => {
    expect(explainDelay({ crawlDelayMs: 2000, health: { streak: 1, backoffMs: 5000 }, lastResponseMs: 100 }, options()).terms).toEqual({
      baseMs: 2000,
      base: 'crawl-delay',
      backoffMs: 5000,
      adaptiveMs: 500,
      maxDelayMs: 60_000,
    });
  });
});
