/**
 * Page profiles: what the pages of the synthetic web look like and how fast their hosts answer.
 * Without one the web serves its tiny pages (about 2 KB of links and padding, the latency the
 * options give). The realistic profile serves pages the size of real HTML — heavy-tailed,
 * tens of KB — with prose, headings, a navigation block, a footer and tens of links, from hosts
 * whose response times differ as real ones do. Every draw is a pure function of (seed, host, page),
 * so two runs of a benchmark crawl the same bytes at the same speeds.
 */
import { z } from 'zod';
import { TestWebError, TestWebErrorCode } from './errors.js';
import { hashInts } from './prng.js';

/** A lognormal distribution given by its median and 90th percentile, capped at `max`. */
const heavyTail = (unit: string, least: number) =>
  z
    .object({
      median: z.number().min(least),
      p90: z.number().min(least),
      max: z.number().min(least),
    })
    .strict()
    .refine((d) => d.median <= d.p90 && d.p90 <= d.max, { message: `${unit}: need median ≤ p90 ≤ max` });

export const PageProfileSchema = z
  .object({
    /** Labels benchmark rows: say what the profile is. */
    name: z.string().min(1),
    /** HTML body size in bytes, per page. */
    pageBytes: heavyTail('pageBytes', 1024),
    /**
     * Links to pages per page, navigation and footer included, drawn per page in [min, max] (skewed
     * towards min: the median is about min + (max − min) / 4). Noisy pages add up to four more
     * (mailto, tel, javascript, rel=nofollow), duplicates and file links theirs.
     */
    links: z
      .object({ min: z.number().int().min(2), max: z.number().int().min(2) })
      .strict()
      .refine((l) => l.min <= l.max, { message: 'links: need min ≤ max' }),
    /** Navigation links every page of a host carries (the same ones: the root and a few pages). */
    navLinks: z.number().int().min(0).max(64),
    /** Footer links every page of a host carries. */
    footerLinks: z.number().int().min(0).max(64),
    /**
     * With `noisyLinks`, the share of body and cross-host links written in a non-canonical form
     * (fragment, utm_*, fbclid, gclid, a percent escape, dot segments). Navigation and footer links
     * never are.
     */
    noisyLinkShare: z.number().min(0).max(1),
    /** Each host's response time (before the headers) in ms, drawn once per host. */
    hostLatencyMs: heavyTail('hostLatencyMs', 0),
    /** Each response's time is the host's ± this share (0.2: ±20 %), never above hostLatencyMs.max. */
    latencyJitter: z.number().min(0).max(1),
    /**
     * `typical`: every page carries the scripts most server-rendered sites do, none of which adds
     * a link or text: an analytics tag loaded from another host, its inline set-up, a JSON-LD
     * block, and the site's own behaviour script (`/static/site.js`: a menu toggle, section
     * anchors). `none` (the default): no script at all.
     */
    scripts: z.enum(['none', 'typical']).default('none'),
  })
  .strict()
  .refine((p) => p.navLinks + p.footerLinks + 1 <= p.links.min, { message: 'links.min must leave room for the navigation, the footer and one body link' });

export type PageProfile = z.infer<typeof PageProfileSchema>;

/**
 * Real HTML: half the pages under ~30 KB, one in ten over ~120 KB, about one in 200 over 500 KB
 * (lognormal, σ ≈ 1.08), capped at 1.5 MB; 20–150 links; hosts answering in ~50 ms at the median,
 * ~150 ms at the 90th percentile and up to 500 ms (a few slow hosts).
 */
export const REALISTIC_PROFILE: PageProfile = Object.freeze({
  name: 'realistic',
  pageBytes: Object.freeze({ median: 30_000, p90: 120_000, max: 1_500_000 }),
  links: Object.freeze({ min: 20, max: 150 }),
  navLinks: 10,
  footerLinks: 5,
  noisyLinkShare: 0.1,
  hostLatencyMs: Object.freeze({ median: 50, p90: 150, max: 500 }),
  latencyJitter: 0.2,
  scripts: 'none',
});

/** Validates a profile; a bad one is an options error listing every bad field. */
export function parsePageProfile(input: unknown): PageProfile {
  const parsed = PageProfileSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'profile'}: ${issue.message}`).join('; ');
    throw new TestWebError(TestWebErrorCode.Options, `profile is invalid: ${problems}`);
  }
  return Object.freeze(parsed.data);
}

/**
 * The realistic profile with its latency capped: `maxLatencyMs` 100 keeps every host at or under
 * 100 ms, so on a polite benchmark a Crawl-delay of 0.5 s binds, not an adaptive delay that grows
 * with the response time (a crawler waiting 5 × the response time would wait 2.5 s after a
 * 500 ms answer).
 */
export function realisticProfile(options: { maxLatencyMs?: number; scripts?: PageProfile['scripts'] } = {}): PageProfile {
  let profile = REALISTIC_PROFILE;
  if (options.scripts !== undefined && options.scripts !== profile.scripts) {
    profile = parsePageProfile({ ...profile, name: `${profile.name}, ${options.scripts} scripts`, scripts: options.scripts });
  }
  if (options.maxLatencyMs === undefined) return profile;
  const max = options.maxLatencyMs;
  return parsePageProfile({
    ...profile,
    name: `${profile.name}, latency ≤ ${max} ms`,
    hostLatencyMs: { median: Math.min(profile.hostLatencyMs.median, max), p90: Math.min(profile.hostLatencyMs.p90, max), max },
  });
}

/** One line for a report: `realistic: pages lognormal median 30 KB, p90 120 KB, ≤ 1.5 MB; 20–150 links; host latency median 50 ms, p90 150 ms, ≤ 500 ms`. */
export function describeProfile(profile: PageProfile): string {
  const kb = (bytes: number) => (bytes >= 1_000_000 ? `${bytes / 1_000_000} MB` : `${Math.round(bytes / 1000)} KB`);
  const { pageBytes: b, hostLatencyMs: l } = profile;
  return (
    `${profile.name}: pages lognormal median ${kb(b.median)}, p90 ${kb(b.p90)}, ≤ ${kb(b.max)}; ${profile.links.min}–${profile.links.max} links; ` +
    `host latency median ${l.median} ms, p90 ${l.p90} ms, ≤ ${l.max} ms${profile.scripts === 'none' ? '' : `; ${profile.scripts} scripts`}`
  );
}

const STREAM_SIZE = 0x512e;
const STREAM_LINKS = 0x11c5;
const STREAM_LATENCY = 0x1a7e;
/** z of the 90th percentile of the standard normal. */
const Z90 = 1.2815515655446004;

const unit = (h: number): number => (h + 0.5) / 4294967296;

/** A standard normal draw from two hashes (Box–Muller). */
function normal(a: number, b: number): number {
  return Math.sqrt(-2 * Math.log(unit(a))) * Math.cos(2 * Math.PI * unit(b));
}

function lognormal(d: { median: number; p90: number; max: number }, a: number, b: number): number {
  const sigma = d.p90 > d.median ? Math.log(d.p90 / d.median) / Z90 : 0;
  return Math.min(d.max, d.median * Math.exp(sigma * normal(a, b)));
}

/** The HTML body size a page of the profile aims at, in bytes. */
export function pageSizeBytes(profile: PageProfile, seed: number, host: number, page: number): number {
  return Math.round(lognormal(profile.pageBytes, hashInts(seed, host, page, STREAM_SIZE, 1), hashInts(seed, host, page, STREAM_SIZE, 2)));
}

/** Links to pages a page carries, navigation, footer and cross-host links included. */
export function pageLinkCount(profile: Pick<PageProfile, 'links'>, seed: number, host: number, page: number): number {
  const u = unit(hashInts(seed, host, page, STREAM_LINKS));
  return profile.links.min + Math.floor(u * u * (profile.links.max - profile.links.min + 1));
}

/** A host's typical response time in ms. */
export function hostLatencyMs(profile: PageProfile, seed: number, host: number): number {
  return lognormal(profile.hostLatencyMs, hashInts(seed, host, STREAM_LATENCY, 1), hashInts(seed, host, STREAM_LATENCY, 2));
}

/** A response's time: the host's, ± the jitter (drawn from `random`), at most the profile's max. */
export function responseLatencyMs(profile: PageProfile, hostMs: number, random: () => number): number {
  const factor = 1 + profile.latencyJitter * (2 * random() - 1);
  return Math.min(profile.hostLatencyMs.max, hostMs * factor);
}
