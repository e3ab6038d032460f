import { z } from 'zod';
import { splitList } from './fields.js';

/**
 * What a crawl's priorities are made of (TRAWL_PRIORITY_WEIGHTS), for a general crawl:
 * - across hosts, a host's score is the weighted mean of its `authority` (distinct hosts linking
 *   to it) and its `seed` priority;
 * - within a host, a discovered link's priority (0..1, mapped onto the priority bands) is 0.5 for
 *   a link on a seed, less `depth` per level below that, `sitemap` for a URL a sitemap names, and
 *   `fresh` more for a link first found on a re-crawled page (new on a page seen before: news).
 */
export const DEFAULT_PRIORITY_WEIGHTS = { authority: 0.5, seed: 0.5, depth: 0.1, sitemap: 0.6, fresh: 0.25 } as const;
export type PriorityWeights = { -readonly [K in keyof typeof DEFAULT_PRIORITY_WEIGHTS]: number };

const NAMES = Object.keys(DEFAULT_PRIORITY_WEIGHTS) as (keyof PriorityWeights)[];

/** "seed=0.8, fresh=0.4" → the defaults with those two replaced; an unknown name or a value outside 0..1 is an error. */
function parseWeights(text: string): unknown {
  const out: Record<string, unknown> = {};
  for (const part of splitList(text)) {
    const [name, value, extra] = part.split('=').map((s) => s.trim());
    if (name === undefined || value === undefined || extra !== undefined || value === '') return text;
    out[name] = Number.isFinite(Number(value)) ? Number(value) : value;
  }
  return out;
}

/** The weights from a `name=value` list (the environment) or an object (a config file); unset: the defaults. */
export const priorityWeights = () =>
  z.preprocess(
    (value) => (typeof value === 'string' ? parseWeights(value.trim()) : (value ?? {})),
    z.unknown().transform((value, ctx): PriorityWeights => {
      const problem = (message: string) => {
        ctx.addIssue({ code: 'custom', message, input: value });
        return z.NEVER;
      };
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return problem(`expected name=value pairs separated by commas, names among ${NAMES.join(', ')}`);
      const weights: PriorityWeights = { ...DEFAULT_PRIORITY_WEIGHTS };
      for (const [name, weight] of Object.entries(value)) {
        if (!(NAMES as string[]).includes(name)) return problem(`unknown weight ${JSON.stringify(name)}: names are ${NAMES.join(', ')}`);
        if (typeof weight !== 'number' || !(weight >= 0 && weight <= 1)) return problem(`${name}: expected a number from 0 to 1, got ${JSON.stringify(weight)}`);
        weights[name as keyof PriorityWeights] = weight;
      }
      return weights;
    }),
  );
