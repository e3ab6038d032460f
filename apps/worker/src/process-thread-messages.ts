import { z } from 'zod';
import { COUNTERS, type CounterName } from '@trawl/model';

/** What the main thread tells the process thread. */
export const toProcessThread = z.discriminatedUnion('kind', [
  /** A body the fetch stage just stored under `key` (its bytes moved, not copied, when they can be). */
  z.object({ kind: z.literal('body'), key: z.string().min(1), bytes: z.instanceof(Uint8Array) }),
  /** Stop reading; finish the pages in hand within `timeoutMs`. */
  z.object({ kind: z.literal('stop'), timeoutMs: z.number().int().min(0) }),
]);
export type ToProcessThread = z.infer<typeof toProcessThread>;

/** What the process thread tells the main thread. */
export const fromProcessThread = z.discriminatedUnion('kind', [
  /** Its stage is running (connections open, the analysis thread started). */
  z.object({ kind: z.literal('started') }),
  /** The thread's counts since its last message, for this process's metrics. */
  z.object({ kind: z.literal('counts'), counts: z.partialRecord(z.enum(COUNTERS as unknown as [CounterName, ...CounterName[]]), z.number()) }),
  z.object({ kind: z.literal('fatal'), message: z.string(), code: z.string().nullable() }),
  z.object({ kind: z.literal('stopped'), drained: z.boolean() }),
]);
export type FromProcessThread = z.infer<typeof fromProcessThread>;
