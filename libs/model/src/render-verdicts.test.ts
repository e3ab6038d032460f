import { ManualClock } from '@trawl/core';
import { DEFAULT_LEARNER_SETTINGS, type HostVerdictStore, MemoryHostVerdicts, needsRendering, RenderLearner } from '@trawl/render';
import { testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisHostVerdicts } from './render-verdicts.js';

const t = testRedis('render-verdicts');
afterAll(() => t.cleanup());

const settings = { ...DEFAULT_LEARNER_SETTINGS, sampleSize: 3, reviewAfterMs: 60_000, claimTtlMs: 10_000 };
const rules = settings;
const prose = 'word '.repeat(300);
/** Looks plain to the classifier, yet has a script: the learner samples its host. */
const LOOKS_PLAIN = needsRendering(`<body><p>${prose}</p><a href="/a">a</a><script src="/menu.js"></script></body>`, 'https://h.example/');
const plain = { links: ['https://h.example/', 'https://h.example/a'], textChars: 1500 };
const richer = { links: [...plain.links, 'https://h.example/m/1', 'https://h.example/m/2', 'https://h.example/m/3'], textChars: 1500 };

let n = 0;
const stores: [string, () => HostVerdictStore][] = [
  ['memory', () => new MemoryHostVerdicts(100)],
  ['Redis', () => new RedisHostVerdicts(t.redis, `${t.prefix}s${(n += 1)}`)],
];

/** The same rules from either store: the Lua scripts mirror learner.ts's pure functions. */
describe.each(stores)('HostVerdictStore conformance: %s', (_name, make) => {
  it('hands out one sample at a time, at once after a gain, sampleSpacing pages after none, and decides as soon as the rest could not change it', async () => {
    const store = make();
    const spaced = { ...rules, sampleSpacing: 2 };
    expect(await store.claim('h.example', spaced, 1000)).toMatchObject({ granted: true, state: { verdict: 'sampling', pending: 1, samples: 0, claimedAt: 1000, passed: 0 } });
    expect(await store.claim('h.example', spaced, 1000)).toMatchObject({ granted: false, state: { pending: 1, passed: 1 } });
    expect(await store.release('h.example', spaced, 1001)).toMatchObject({ pending: 0 });
    expect((await store.claim('h.example', spaced, 1002)).granted).toBe(true);
    expect(await store.record('h.example', true, spaced, 2000)).toMatchObject({ verdict: 'sampling', samples: 1, gains: 1, lastGained: true });
    expect((await store.claim('h.example', spaced, 2000)).granted).toBe(true);
    expect(await store.record('h.example', false, spaced, 2001)).toMatchObject({ verdict: 'sampling', samples: 2, gains: 1, lastGained: false });
    expect((await store.claim('h.example', spaced, 2002)).granted).toBe(false);
    expect((await store.claim('h.example', spaced, 2003)).granted).toBe(false);
    expect(await store.claim('h.example', spaced, 2004)).toMatchObject({ granted: true, state: { passed: 0, claimedAt: 2004 } });
    expect(await store.record('h.example', true, spaced, 2010)).toEqual({
      verdict: 'render',
      samples: 3,
      pending: 0,
      gains: 2,
      decidedAt: 2010,
      claimedAt: 2004,
      passed: 0,
      lastGained: true,
    });
    // A verdict counts nothing more, hands out nothing, and stands until its review.
    expect(await store.record('h.example', false, spaced, 2011)).toMatchObject({ verdict: 'render', samples: 3, gains: 2 });
    expect((await store.claim('h.example', spaced, 2010 + 59_999)).granted).toBe(false);
    expect(await store.read('h.example', spaced, 2010 + 59_999)).toMatchObject({ verdict: 'render' });
    expect(await store.read('h.example', spaced, 2010 + 60_000)).toMatchObject({ verdict: 'sampling', samples: 0 });
    expect(await store.claim('h.example', spaced, 2010 + 60_000)).toMatchObject({ granted: true, state: { verdict: 'sampling', pending: 1, samples: 0 } });
  });

  it('lets a sample never counted lapse claimTtlMs after its claim; two of three that found nothing settle the host plain', async () => {
    const store = make();
    expect((await store.claim('p.example', rules, 0)).granted).toBe(true);
    expect((await store.claim('p.example', rules, 9_999)).granted).toBe(false);
    expect(await store.claim('p.example', rules, 10_000)).toMatchObject({ granted: true, state: { pending: 1 } });
    expect(await store.record('p.example', false, rules, 11_000)).toMatchObject({ verdict: 'sampling', samples: 1 });
    expect(await store.record('p.example', false, rules, 11_001)).toMatchObject({ verdict: 'plain', gains: 0, samples: 2, pending: 0, decidedAt: 11_001 });
    expect(await store.read('unknown.example', rules, 0)).toEqual({ verdict: 'sampling', samples: 0, pending: 0, gains: 0, decidedAt: null, claimedAt: null, passed: 0, lastGained: false });
  });
});

describe('RenderLearner over Redis', () => {
  it('a restarted worker finds the verdict its predecessor reached and samples nothing again', async () => {
    const clock = new ManualClock(1_000_000);
    const namespace = `${t.prefix}restart`;
    const first = new RenderLearner(settings, clock, new RedisHostVerdicts(t.redis, namespace));
    for (let i = 1; i <= 2; i++) {
      expect(await first.decide('h.example', LOOKS_PLAIN)).toMatchObject({ render: true, sample: true, reason: `sampling ${i}/3` });
      await first.observe('h.example', plain, richer);
    }
    // The worker restarts: a new learner, nothing in memory.
    const restarted = new RenderLearner(settings, clock, new RedisHostVerdicts(t.redis, namespace));
    expect(await restarted.decide('h.example', LOOKS_PLAIN)).toEqual({ render: true, reason: 'host renders (2/2 samples gained)', sample: false });
    expect(await restarted.state('h.example')).toMatchObject({ verdict: 'render', samples: 2, pending: 0 });
    // Another worker sees it too, and once it knows, asks Redis no more for this host.
    const other = new RenderLearner(settings, clock, new RedisHostVerdicts(t.redis, namespace));
    expect(await other.decide('h.example', LOOKS_PLAIN)).toMatchObject({ render: true, sample: false });
    await t.redis.del(`${namespace}:render:learn:h.example`);
    expect(await other.decide('h.example', LOOKS_PLAIN)).toMatchObject({ render: true, sample: false });
  });

  it('workers sampling one host at once hand out one sample between them', async () => {
    const clock = new ManualClock(1_000_000);
    const namespace = `${t.prefix}race`;
    const workers = Array.from({ length: 4 }, () => new RenderLearner(settings, clock, new RedisHostVerdicts(t.redis, namespace)));
    const decisions = await Promise.all(workers.flatMap((w) => Array.from({ length: 5 }, () => w.decide('busy.example', LOOKS_PLAIN))));
    expect(decisions.filter((d) => d.sample)).toHaveLength(1);
    expect(decisions.filter((d) => d.render)).toHaveLength(1);
  });
});
