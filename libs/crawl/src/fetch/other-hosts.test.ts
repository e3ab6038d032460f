import { ManualClock } from '@trawl/core';
import { loadConfig } from '@trawl/config';
import type { FetchResult } from '@trawl/fetch';
import { Frontier } from '@trawl/frontier';
import { policyFromConfig, resolvePolicy, type ResolvedPolicy } from '@trawl/model';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { RequestRefused, type SubrequestInfo } from '@trawl/render';
import type { RobotsEntry } from '@trawl/robots';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { BORROW_WITHIN_MS, otherHostFetch, type OtherHostDeps, otherHostRefusals } from './other-hosts.js';

/**
 * A rendered page's request to another host, against the real frontier scripts: fetched only
 * under a borrow of that host's gate and its cached robots.txt, the host then due its delay after
 * the response; refused at once otherwise, without a byte sent.
 */
const t: TestRedis = testRedis('otherhosts');
afterAll(() => t.cleanup());

const T0 = 1_000_000;
const CDN = 'cdn.example';
const SCRIPT = `http://${CDN}/lib.js`;
const DELAY = 400;
let run = 0;
let clock: ManualClock;
let frontier: Frontier;
let robots: RobotsEntry | null;
/** What the other host's robots.txt says when it is fetched. */
let robotsBody: string;
let fetched: string[];
let counts: Map<string, number>;
let fail: Error | null;
let policy: ResolvedPolicy;
/** The address gate's answer to a borrowed request (null: no address gate), and what it was told. */
let address: 'go' | 'wait' | null;
let addressCalls: { holder: string; probe: boolean; left?: number }[];

const rules = (body: string, fetchedAt = T0): RobotsEntry => ({ kind: 'rules', status: 200, body, fetchedAt, expiresAt: fetchedAt + 86_400_000 });

beforeEach(() => {
  run += 1;
  clock = new ManualClock(T0);
  frontier = new Frontier(t.redis, { prefix: `${t.prefix}:${run}`, partitions: 2, bands: 4, leaseMs: 10_000, fetchHoldMs: 30_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock });
  robots = rules('User-agent: *\nAllow: /\n');
  robotsBody = 'User-agent: *\nCrawl-delay: 1\n';
  fetched = [];
  counts = new Map();
  fail = null;
  address = null;
  addressCalls = [];
  const config = loadConfig({ env: { TRAWL_MIN_DELAY_MS: String(DELAY), TRAWL_ADAPTIVE_DELAY_FACTOR: '0' } });
  policy = resolvePolicy(policyFromConfig(config, ['http://site.example/']));
});

function deps(): OtherHostDeps {
  return {
    frontier,
    clock,
    logger: silentLogger,
    counters: { add: (name: string, by = 1) => void counts.set(name, (counts.get(name) ?? 0) + by) },
    robots: {
      get: async () => robots,
      set: async (_origin: string, entry: RobotsEntry) => void (robots = entry),
    },
    ...(address === null
      ? {}
      : {
          addresses: {
            enter: async (request, _settings, options) => {
              const call: (typeof addressCalls)[number] = { holder: request.holder, probe: options?.probe === true };
              addressCalls.push(call);
              return address === 'wait' ? { kind: 'wait' as const, at: clock.now() + 1000 } : { kind: 'go' as const, leave: (nextAt: number) => void (call.left = nextAt) };
            },
          },
        }),
    fetcher: {
      fetchRobots: async (robotsUrl: string) => {
        fetched.push(robotsUrl);
        clock.advance(30);
        return { kind: 'response' as const, status: 200, body: Buffer.from(robotsBody), finalUrl: robotsUrl, redirects: 0, truncated: false };
      },
      fetch: async (url: string) => {
        fetched.push(url);
        if (fail) throw fail;
        const body = Buffer.from('void 0');
        const startedAt = clock.now();
        return { url, status: 200, headers: {}, contentType: 'application/javascript', charset: null, location: null, body, truncated: false, bodySkipped: false, rawBytes: body.length, startedAt, firstByteAt: startedAt + 10, endedAt: startedAt + 20, etag: null, lastModified: null } satisfies FetchResult;
      },
    },
  } as OtherHostDeps;
}

const request = (): SubrequestInfo => ({ resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal });
const fetchScript = (url = SCRIPT) => otherHostFetch(deps(), policy, () => 5000)(url, request());
const refusal = async (promise: Promise<unknown>): Promise<string> => {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RequestRefused);
  return (error as RequestRefused).reason;
};

describe('otherHostFetch', () => {
  it('fetches under a borrow of a free, due host, which is then due its delay after the response, its token free', async () => {
    const response = await fetchScript();
    expect(response.status).toBe(200);
    expect(fetched).toEqual([SCRIPT]);
    expect(await frontier.hostState(CDN)).toMatchObject({ fetching: false, due: T0 + 20 + DELAY, total: 0, queued: 0 });
    expect(counts.get('renderBorrowed')).toBe(1);
  });

  it('takes the Crawl-delay of the cached robots.txt, and refuses what it disallows', async () => {
    robots = rules('User-agent: *\nCrawl-delay: 2\nDisallow: /private\n');
    await fetchScript();
    expect((await frontier.hostState(CDN)).due).toBe(T0 + 20 + 2000);
    expect(await refusal(fetchScript(`http://${CDN}/private/x.js`))).toMatch(/^other-host cdn\.example: robots: /);
    expect(fetched).toEqual([SCRIPT]);
  });

  it('with no fresh robots.txt cached, the borrowed turn fetches and caches it, the request refused this time; the next finds it', async () => {
    robots = null;
    expect(await refusal(fetchScript())).toBe('other-host cdn.example: robots.txt fetched in its turn');
    expect(fetched).toEqual([`http://${CDN}/robots.txt`]);
    // The host is due its (new) Crawl-delay after the robots.txt response, its token free.
    expect(await frontier.hostState(CDN)).toMatchObject({ fetching: false, due: T0 + 30 + 1000 });
    expect(robots).toMatchObject({ kind: 'rules' });
    // Not due yet: refused at once, nothing sent.
    expect(await refusal(fetchScript())).toMatch(/^other-host cdn\.example: not due/);
    clock.advance(1001);
    expect((await fetchScript()).status).toBe(200);
    expect(fetched).toEqual([`http://${CDN}/robots.txt`, SCRIPT]);
    // A stale copy is fetched again the same way.
    robots = rules('User-agent: *\nAllow: /\n', T0 - 90_000_000);
    clock.advance(2000);
    expect(await refusal(fetchScript())).toBe('other-host cdn.example: robots.txt fetched in its turn');
    expect(fetched).toHaveLength(3);
    expect(counts.get('robotsFetched')).toBe(2);
  });

  it('a robots.txt that disallows the request, once fetched, refuses it from the cache', async () => {
    robots = null;
    robotsBody = 'User-agent: *\nDisallow: /\n';
    await refusal(fetchScript());
    clock.advance(5000);
    expect(await refusal(fetchScript())).toMatch(/^other-host cdn\.example: robots: /);
    expect(fetched).toEqual([`http://${CDN}/robots.txt`]);
  });

  it('refuses at once a host whose token is out, or that is not due within the bound', async () => {
    const held = await frontier.borrowHost(CDN, { holdMs: 5000, withinMs: 0 });
    expect(held.kind).toBe('granted');
    expect(await refusal(fetchScript())).toBe('other-host cdn.example: busy');
    await frontier.returnHost(CDN, (held as { token: string }).token, T0 + 1000);
    expect(await refusal(fetchScript())).toBe('other-host cdn.example: not due for 1000 ms');
    expect(fetched).toEqual([]);
  });

  it('waits for a due time within the bound, then fetches', async () => {
    const held = await frontier.borrowHost(CDN, { holdMs: 5000, withinMs: 0 });
    await frontier.returnHost(CDN, (held as { token: string }).token, T0 + BORROW_WITHIN_MS - 50);
    const timer = setInterval(() => clock.advance(10), 1);
    try {
      await fetchScript();
    } finally {
      clearInterval(timer);
    }
    expect(fetched).toEqual([SCRIPT]);
    expect(clock.now()).toBeGreaterThan(T0 + BORROW_WITHIN_MS - 50);
  });

  it('asks the address group once, never waiting: refused, the host is returned untouched; granted, left with the host\'s next due time', async () => {
    address = 'wait';
    expect(await refusal(fetchScript())).toBe('other-host cdn.example: address group busy');
    expect(fetched).toEqual([]);
    expect(await frontier.hostState(CDN)).toMatchObject({ fetching: false, due: 0 });
    address = 'go';
    await fetchScript();
    expect(fetched).toEqual([SCRIPT]);
    expect(addressCalls).toEqual([
      { holder: expect.stringMatching(/^borrow:/), probe: true },
      { holder: expect.stringMatching(/^borrow:/), probe: true, left: T0 + 20 + DELAY },
    ]);
  });

  it('a failed fetch returns the host, due its delay from the failure, and fails the request', async () => {
    fail = new Error('connection reset');
    await expect(fetchScript()).rejects.toThrow('connection reset');
    expect(await frontier.hostState(CDN)).toMatchObject({ fetching: false, due: T0 + DELAY });
  });
});

describe('otherHostRefusals', () => {
  it('names each refused host and why once, the first few, and nothing for the lib\'s own refusals', () => {
    const blocked = (reason: string) => ({ url: 'x', resourceType: 'script', outcome: 'blocked' as const, reason });
    expect(otherHostRefusals([blocked('other-host'), blocked('resource-type:image'), { url: 'y', resourceType: 'script', outcome: 'fetched' }])).toBe('');
    expect(otherHostRefusals([blocked('other-host a.example: busy'), blocked('other-host a.example: busy'), blocked('other-host b.example: robots.txt not cached')])).toBe(
      'other hosts refused: a.example busy, b.example robots.txt not cached',
    );
    expect(otherHostRefusals(['a', 'b', 'c', 'd', 'e'].map((h) => blocked(`other-host ${h}.example: busy`)))).toBe('other hosts refused: a.example busy, b.example busy, c.example busy, +2');
  });
});
