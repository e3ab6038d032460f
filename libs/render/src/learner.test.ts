import { ManualClock } from '@trawl/core';
import { describe, expect, it, vi } from 'vitest';
import { needsRendering } from './classify.js';
import { compareYields, DEFAULT_LEARNER_SETTINGS, MemoryHostVerdicts, RenderLearner } from './learner.js';

const prose = 'word '.repeat(300);
/** Looks plain to the classifier (text, links, an opaque bundle), yet its bundle adds a menu of links. */
const LOOKS_PLAIN = `<body><nav><a href="/">home</a></nav><p>${prose}</p><a href="/a">a</a><script src="/menu.js"></script></body>`;
const NO_SCRIPTS = `<body><p>${prose}</p><a href="/a">a</a></body>`;
const SHELL = '<body><div id="root"></div><script src="/app.js"></script></body>';

const links = (...paths: string[]): string[] => paths.map((p) => `https://h.example${p}`);
const plain = { links: links('/', '/a'), textChars: 1500 };
const richer = { links: links('/', '/a', '/m/1', '/m/2', '/m/3', '/m/4'), textChars: 1600 };
const same = { links: links('/a', '/'), textChars: 1510 };

describe('compareYields', () => {
  it.each([
    ['four new links over two', plain, richer, true, 4],
    ['the same links in another order', plain, same, false, 0],
    ['two new links: under minExtraLinks', plain, { links: [...plain.links, ...links('/x', '/y')], textChars: 1500 }, false, 2],
    ['much more text, no new links', plain, { links: plain.links, textChars: 1500 + DEFAULT_LEARNER_SETTINGS.minExtraTextChars }, true, 0],
    ['three new links against a hundred: under minLinkGain', { links: links(...Array.from({ length: 100 }, (_, i) => `/p/${i}`)), textChars: 9000 }, { links: links(...Array.from({ length: 103 }, (_, i) => `/p/${i}`)), textChars: 9000 }, false, 3],
  ])('%s', (_name, before, after, gained, extraLinks) => {
    expect(compareYields(before, after)).toMatchObject({ gained, extraLinks });
  });
});

describe('RenderLearner', () => {
  const settings = { ...DEFAULT_LEARNER_SETTINGS, sampleSize: 3, reviewAfterMs: 60_000, maxHosts: 2 };

  it('samples a host whose pages look plain; two samples in a row that gain make it render at once', async () => {
    const learner = new RenderLearner(settings, new ManualClock());
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    expect(page.render).toBe(false);
    for (let i = 1; i <= 2; i++) {
      expect(await learner.decide('h.example', page)).toEqual({ render: true, reason: `sampling ${i}/3`, sample: true });
      await learner.observe('h.example', plain, richer);
    }
    expect(await learner.state('h.example')).toMatchObject({ verdict: 'render', samples: 2, gains: 2 });
    expect(await learner.decide('h.example', page)).toEqual({ render: true, reason: 'host renders (2/2 samples gained)', sample: false });
  });

  it('after a sample that found nothing, the next waits sampleSpacing pages; a second that found nothing settles the host plain', async () => {
    const learner = new RenderLearner({ ...settings, sampleSpacing: 10 }, new ManualClock());
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    expect(await learner.decide('h.example', page)).toMatchObject({ render: true, sample: true });
    await learner.observe('h.example', plain, same);
    for (let i = 0; i < 10; i++) expect(await learner.decide('h.example', page)).toEqual({ render: false, reason: 'plain-html', sample: false });
    expect(await learner.state('h.example')).toMatchObject({ verdict: 'sampling', samples: 1, passed: 10 });
    expect(await learner.decide('h.example', page)).toEqual({ render: true, reason: 'sampling 2/3', sample: true });
    await learner.observe('h.example', plain, same);
    // Two of three found nothing: the third could not make half gain.
    expect(await learner.state('h.example')).toMatchObject({ verdict: 'plain', samples: 2, gains: 0 });
    expect(await learner.decide('h.example', page)).toEqual({ render: false, reason: 'plain-html', sample: false });
    expect(await learner.decide('h.example', needsRendering(SHELL, 'https://h.example/x'))).toEqual({ render: true, reason: 'empty-app-root', sample: false });
  });

  it('a gain, then nothing: the third sample, sampleSpacing pages later, decides', async () => {
    const learner = new RenderLearner({ ...settings, sampleSpacing: 2 }, new ManualClock());
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    const rendered: boolean[] = [];
    const outcomes = [richer, same, richer];
    for (let i = 0; i < 6; i++) {
      const decision = await learner.decide('h.example', page);
      rendered.push(decision.render);
      if (decision.sample) await learner.observe('h.example', plain, outcomes.shift() ?? same);
    }
    // Page 1 gains, so page 2 is a sample at once; it finds nothing, so pages 3 and 4 pass; page 5 gains: 2 of 3.
    expect(rendered).toEqual([true, true, false, false, true, true]);
    expect(await learner.state('h.example')).toMatchObject({ verdict: 'render', samples: 3, gains: 2 });
  });

  it('hands out one sample at a time: concurrent pages of a new host render one, and a failed one is replaced at once', async () => {
    const learner = new RenderLearner(settings, new ManualClock());
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    const decisions = await Promise.all(Array.from({ length: 5 }, () => learner.decide('h.example', page)));
    expect(decisions.map((d) => d.render)).toEqual([true, false, false, false, false]);
    await learner.abandon('h.example');
    expect(await learner.decide('h.example', page)).toMatchObject({ render: true, sample: true });
    expect(await learner.state('h.example')).toMatchObject({ pending: 1, samples: 0 });
  });

  it('never samples a page whose scripts would not run (another host\'s only, inert inline code)', async () => {
    const learner = new RenderLearner(settings, new ManualClock());
    const inert = needsRendering(`<body><p>${prose}</p><a href="/a">a</a><script async src="https://tags.example/t.js"></script><script>window.q=[];</script></body>`, 'https://h.example/');
    expect(inert.reason).toBe('inert-scripts');
    expect(await learner.decide('h.example', inert)).toEqual({ render: false, reason: 'inert-scripts', sample: false });
    expect(await learner.state('h.example')).toMatchObject({ verdict: 'sampling', samples: 0, pending: 0 });
  });

  it('never renders a page without scripts, and does not count it as a sample', async () => {
    const learner = new RenderLearner(settings, new ManualClock());
    expect(await learner.decide('h.example', needsRendering(NO_SCRIPTS, 'https://h.example/'))).toEqual({ render: false, reason: 'no-scripts', sample: false });
    expect(await learner.state('h.example')).toMatchObject({ verdict: 'sampling', samples: 0 });
  });

  it('samples the host again once its verdict is older than reviewAfterMs', async () => {
    const clock = new ManualClock();
    const learner = new RenderLearner(settings, clock);
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    for (let i = 0; i < 3; i++) await learner.observe('h.example', plain, same);
    expect((await learner.state('h.example')).verdict).toBe('plain');
    clock.advance(59_999);
    expect((await learner.decide('h.example', page)).render).toBe(false);
    clock.advance(1);
    expect(await learner.decide('h.example', page)).toMatchObject({ render: true, sample: true });
  });

  it('with sampleSize 0 only the classifier decides', async () => {
    const learner = new RenderLearner({ ...settings, sampleSize: 0 }, new ManualClock());
    expect((await learner.decide('h.example', needsRendering(LOOKS_PLAIN, 'https://h.example/'))).render).toBe(false);
    expect(await learner.decide('h.example', needsRendering(SHELL, 'https://h.example/'))).toMatchObject({ render: true, sample: false });
  });

  it('forgets the least recently decided host beyond maxHosts', async () => {
    const learner = new RenderLearner(settings, new ManualClock());
    for (let i = 0; i < 3; i++) await learner.observe('a.example', plain, richer);
    await learner.state('b.example');
    await learner.state('a.example');
    await learner.state('c.example'); // b goes, a was used since
    expect((await learner.state('a.example')).verdict).toBe('render');
  });

  it('answers a host with a verdict from memory, and asks the store again only after cacheMs while its samples are all out', async () => {
    const clock = new ManualClock();
    const store = new MemoryHostVerdicts(10);
    const claims = vi.spyOn(store, 'claim');
    const learner = new RenderLearner({ ...settings, sampleSize: 1 }, clock, store, 2000);
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    expect(await learner.decide('h.example', page)).toMatchObject({ sample: true });
    expect(await learner.decide('h.example', page)).toMatchObject({ render: false, sample: false });
    expect(await learner.decide('h.example', page)).toMatchObject({ render: false, sample: false });
    expect(claims).toHaveBeenCalledTimes(1);
    clock.advance(2000);
    await learner.decide('h.example', page);
    expect(claims).toHaveBeenCalledTimes(2);
    await learner.observe('h.example', plain, richer);
    for (let i = 0; i < 10; i++) expect(await learner.decide('h.example', page)).toMatchObject({ render: true, sample: false });
    expect(claims).toHaveBeenCalledTimes(2);
  });

  it('frees a sample never observed nor abandoned (a worker died) claimTtlMs after it was handed out', async () => {
    const clock = new ManualClock();
    const learner = new RenderLearner({ ...settings, claimTtlMs: 120_000 }, clock, new MemoryHostVerdicts(10), 0);
    const page = needsRendering(LOOKS_PLAIN, 'https://h.example/');
    for (let i = 0; i < 3; i++) await learner.decide('h.example', page);
    expect(await learner.decide('h.example', page)).toMatchObject({ render: false });
    clock.advance(119_999);
    expect(await learner.decide('h.example', page)).toMatchObject({ render: false });
    clock.advance(1);
    expect(await learner.decide('h.example', page)).toEqual({ render: true, reason: 'sampling 1/3', sample: true });
  });
});
