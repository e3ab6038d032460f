import { z } from 'zod';
import type { RobotsEntry } from './policy.js';

// z.number() rejects NaN and ±Infinity in zod 4.
const time = z.number();
const status = z.number().int().min(0).max(999);

/** A cached entry as read back from Redis: anything else is treated as missing. */
export const robotsEntrySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('rules'), status, body: z.string(), fetchedAt: time, expiresAt: time }),
  z.object({ kind: z.literal('allow-all'), status, fetchedAt: time, expiresAt: time }),
  z.object({
    kind: z.literal('unavailable'),
    reason: z.string(),
    since: time,
    failures: z.number().int().min(1),
    retryAt: time,
    lastGood: z.object({ body: z.string(), fetchedAt: time }).nullable(),
    permissive: z.literal(true).optional(),
  }),
]);

// The schema and the hand-written type must describe the same thing.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _schemaMatchesType: Same<z.output<typeof robotsEntrySchema>, RobotsEntry> = true;
void _schemaMatchesType;

/** Parses a stored JSON string: the entry, or why it is unusable. */
export function readEntry(raw: string): { entry: RobotsEntry } | { problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { problem: `not JSON: ${raw.slice(0, 60)}` };
  }
  const result = robotsEntrySchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { problem: `not a robots entry: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}` };
  }
  return { entry: result.data };
}
