import { createHash } from 'node:crypto';
import { STATUS_CODES } from 'node:http';

/** Header values as Node and got give them: repeated headers (Set-Cookie) as arrays. */
export type HttpHeaders = Record<string, string | readonly string[] | undefined> | readonly (readonly [string, string])[];

/**
 * How the response body was recorded. WARC wants the payload as transferred; trawl's fetcher
 * decompresses while it reads, so its bodies are `decoded`: the writer then says so in the
 * headers (Content-Encoding and Transfer-Encoding move to X-Archive-Orig-*, Content-Length is
 * the decoded length), so a replay tool does not try to decompress plain bytes.
 */
export type BodyForm = 'as-transferred' | 'decoded';

/** One HTTP exchange as the crawl saw it. */
export interface HttpExchange {
  url: string;
  /** When the request started, epoch ms (or a Date). */
  fetchedAt: number | Date;
  /** The server's address, when known (WARC-IP-Address). */
  ip?: string | null;
  /** Omitted: no request record is written. */
  request?: { method: string; headers: HttpHeaders; httpVersion?: string };
  response: {
    status: number;
    statusText?: string;
    headers: HttpHeaders;
    body: Uint8Array;
    bodyForm: BodyForm;
    /** The body was cut at the size cap (WARC-Truncated: length). */
    truncated?: boolean;
    httpVersion?: string;
  };
}

/** Headers dropped from a decoded body's record (kept under X-Archive-Orig-<name>). */
const ENCODING_HEADERS = new Set(['content-encoding', 'transfer-encoding', 'content-length']);

export function headerPairs(headers: HttpHeaders): [string, string][] {
  const pairs: [string, string][] = [];
  const entries: Iterable<readonly [string, string | readonly string[] | undefined]> = Array.isArray(headers)
    ? (headers as readonly (readonly [string, string])[])
    : Object.entries(headers as Record<string, string | readonly string[] | undefined>);
  for (const [name, value] of entries) {
    if (value === undefined) continue;
    if (typeof value === 'string') pairs.push([name, clean(value)]);
    else for (const one of value) pairs.push([name, clean(one)]);
  }
  return pairs;
}

/** Header values end at a line break: a hostile server's CR/LF must not forge WARC structure. */
const clean = (value: string): string => value.replace(/[\r\n]+/g, ' ');

/**
 * The response headers to record: as received, except that a decoded body gets its encoding
 * headers renamed and a Content-Length that matches the recorded payload.
 */
export function recordedResponseHeaders(headers: HttpHeaders, body: Uint8Array, form: BodyForm): [string, string][] {
  const pairs = headerPairs(headers);
  if (form === 'as-transferred') return pairs;
  const out: [string, string][] = [];
  for (const [name, value] of pairs) {
    if (ENCODING_HEADERS.has(name.toLowerCase())) {
      if (name.toLowerCase() !== 'content-length') out.push([`X-Archive-Orig-${name}`, value]);
    } else {
      out.push([name, value]);
    }
  }
  out.push(['Content-Length', String(body.byteLength)]);
  return out;
}

export function statusLine(status: number, statusText?: string, httpVersion = '1.1'): string {
  return `HTTP/${httpVersion} ${status} ${clean(statusText ?? STATUS_CODES[status] ?? '')}`.trimEnd();
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 with padding (the alphabet of WARC and CDX digests). */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

/** `sha1:<base32>` of a payload: the WARC-Payload-Digest trawl writes, and CDX's digest. */
export function payloadDigest(payload: Uint8Array): string {
  return `sha1:${base32(createHash('sha1').update(payload).digest())}`;
}

/** WARC-Date form: ISO 8601 UTC with milliseconds (WARC 1.1 allows fractions of a second). */
export function warcDate(at: number | Date): string {
  return new Date(at).toISOString();
}
