import type { FetchResult } from '@trawl/fetch';
// The job's codec alone: a process stage loads no BullMQ.
import { type FetchJob, decodeFetchJob, encodeFetchJob, fetchJobDataSchema } from '@trawl/queue/job';
import { z } from 'zod';

/**
 * What the fetch stage hands the process stage for one page (a process stream entry): the job,
 * the response without its body, and where the body is stored. The body itself is in the
 * content store (content-addressed); an entry names it, never carries it.
 */
export interface HandedPage {
  job: FetchJob;
  response: Omit<FetchResult, 'body'>;
  /** The stored body (null: none to keep — a 304, a redirect, an empty or skipped body). */
  body: StoredRef | null;
  /**
   * Whether the fetch stage rendered the page, and why (absent: rendering is off or the page is
   * not HTML). `dom`: the rendered DOM, stored beside the body; the page's links, text and
   * fingerprint come from it.
   */
  render?: { rendered: boolean; reason: string; dom: StoredRef | null };
}

/** A body in the content store. */
export interface StoredRef {
  key: string;
  contentHash: string;
  bytes: number;
}

const storedRef = z.object({ key: z.string(), contentHash: z.string(), bytes: z.number().int().min(0) });

const headerValue = z.union([z.string(), z.array(z.string())]);

/** The payload as the process stage reads it back: validated, since a stream entry is input like any other. */
const payloadSchema = z.object({
  j: fetchJobDataSchema,
  r: z.object({
    url: z.string(),
    status: z.number().int(),
    headers: z.record(z.string(), headerValue.optional()),
    contentType: z.string().nullable(),
    charset: z.string().nullable(),
    location: z.string().nullable(),
    truncated: z.boolean(),
    bodySkipped: z.boolean(),
    rawBytes: z.number(),
    startedAt: z.number(),
    firstByteAt: z.number().nullable(),
    endedAt: z.number(),
    etag: z.string().nullable(),
    lastModified: z.string().nullable(),
    wire: z
      .object({
        request: z.object({ method: z.string(), headers: z.record(z.string(), headerValue) }),
        httpVersion: z.string(),
        statusText: z.string(),
        rawHeaders: z.array(z.tuple([z.string(), z.string()])),
        remoteAddress: z.string().nullable(),
      })
      .optional(),
  }),
  b: storedRef.nullable(),
  d: z.object({ rendered: z.boolean(), reason: z.string(), dom: storedRef.nullable() }).optional(),
});

export function encodeHandedPage(page: HandedPage): string {
  return JSON.stringify({ j: encodeFetchJob(page.job), r: page.response, b: page.body, ...(page.render ? { d: page.render } : {}) });
}

/** The page an entry carries, or why it cannot be read (the entry is then dropped and counted). */
export function decodeHandedPage(payload: string): HandedPage | { error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(payload);
  } catch (error) {
    return { error: `not JSON: ${(error as Error).message}` };
  }
  const parsed = payloadSchema.safeParse(raw);
  if (!parsed.success) return { error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  const { j, r, b, d } = parsed.data;
  return { job: decodeFetchJob(j), response: r as HandedPage['response'], body: b, ...(d ? { render: d } : {}) };
}
