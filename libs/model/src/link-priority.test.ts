import { loadConfig } from '@trawl/config';
import { UrlFlag } from '@trawl/frontier';
import { fingerprint } from '@trawl/url';
import { describe, expect, it } from 'vitest';
import { type Candidate, candidatesFromLinks, hostNotes, linkPriority, PRIORITY, seedCandidate } from './discovery.js';
import { crawlPolicySchema, policyFromConfig, resolvePolicy } from './policy.js';

const GENERAL = { depth: 0.1, sitemap: 0.6, fresh: 0.25 };
const NEWS = { depth: 0.15, sitemap: 0.8, fresh: 0.5 };
const counters = { add: () => undefined };
const links = (...urls: string[]) => urls.map((url) => ({ url, nofollow: false }));

describe('linkPriority', () => {
  it.each<[string, Parameters<typeof linkPriority>[0], typeof GENERAL, number]>([
    ['a link on a seed page', { depth: 1 }, GENERAL, 0.5],
    ['two levels below the seed', { depth: 3 }, GENERAL, 0.3],
    ['very deep: never below 0', { depth: 40 }, GENERAL, 0],
    ['named by a sitemap', { depth: 1, sitemap: true }, GENERAL, 0.6],
    ['new on a re-crawled seed page', { depth: 1, recrawl: true }, GENERAL, 0.75],
    ['new on a re-crawled page three levels down', { depth: 4, recrawl: true }, GENERAL, 0.45],
    ['news: new on a re-crawled section page', { depth: 2, recrawl: true }, NEWS, 0.85],
    ['news: a sitemap\'s new entry on a re-crawl never above 1', { depth: 1, sitemap: true, recrawl: true }, NEWS, 1],
    ['a policy from before link priority: flat', { depth: 5, recrawl: true }, crawlPolicySchema.shape.linkPriority.parse(undefined), PRIORITY.link],
  ])('%s', (_name, context, weights, expected) => {
    expect(linkPriority(context, weights)).toBeCloseTo(expected, 12);
  });

  it('puts new links on a re-crawled page ahead of deep links queued before', () => {
    expect(linkPriority({ depth: 2, recrawl: true }, GENERAL)).toBeGreaterThan(linkPriority({ depth: 4 }, GENERAL));
  });
});

describe('candidatesFromLinks: priority and linking host', () => {
  const policy = resolvePolicy(policyFromConfig(loadConfig({ env: { TRAWL_SCOPE: 'any' } }), []));
  const page = { url: 'http://a.example/news', hash: fingerprint('http://a.example/news'), depth: 2 };

  it('gives every link the priority of where it was found, and names the linking host on links to other hosts', () => {
    const found = candidatesFromLinks(links('http://a.example/x', 'http://b.example/y'), page, policy, counters, Date.now());
    // Depth 3: two levels below the seed's links.
    expect(found.map((c) => [c.host, c.priority.toFixed(6), c.fromHost])).toEqual([
      ['a.example', '0.300000', undefined],
      ['b.example', '0.300000', 'a.example'],
    ]);
    const again = candidatesFromLinks(links('http://a.example/z'), { ...page, recrawl: true }, policy, counters, Date.now());
    expect(again[0]?.priority).toBeCloseTo(0.55, 12);
  });

  it('counts no sitemap entry as a link, and gives it the sitemap\'s priority', () => {
    const found = candidatesFromLinks(links('http://b.example/y'), { ...page, depth: 0, sitemap: true }, policy, counters, Date.now());
    expect(found.map((c) => [c.priority, c.fromHost])).toEqual([[0.6, undefined]]);
  });

  it('follows TRAWL_PRIORITY_WEIGHTS through the published policy', () => {
    const news = resolvePolicy(policyFromConfig(loadConfig({ env: { TRAWL_SCOPE: 'any', TRAWL_PRIORITY_WEIGHTS: 'depth=0,fresh=0.4' } }), []));
    expect(candidatesFromLinks(links('http://a.example/x'), { ...page, recrawl: true }, news, counters, Date.now())[0]?.priority).toBeCloseTo(0.9, 12);
  });
});

describe('hostNotes', () => {
  const link = (host: string, fromHost?: string): Candidate => ({ url: `http://${host}/`, hash: fingerprint(`http://${host}/`), host, depth: 1, hops: 0, flags: 0, priority: 0.5, from: null, ...(fromHost ? { fromHost } : {}) });

  it('notes each linking host once per target, skips links within a host, and notes seeds\' priorities', () => {
    const seed = seedCandidate('http://s.example/', resolvePolicy(policyFromConfig(loadConfig({ env: {} }), [])));
    if ('error' in seed) throw new Error(seed.error);
    expect(hostNotes([link('b.example', 'a.example'), link('b.example', 'a.example'), link('b.example', 'c.example'), link('a.example', 'a.example'), link('d.example'), { ...seed, priority: 0.3 }])).toEqual([
      { host: 'b.example', linkedFrom: 'a.example' },
      { host: 'b.example', linkedFrom: 'c.example' },
      { host: 's.example', seedPriority: 0.3 },
    ]);
    expect(seed.flags & UrlFlag.Seed).toBe(UrlFlag.Seed);
  });
});
