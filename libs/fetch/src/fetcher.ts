import { type ClientRequest, type IncomingMessage, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createInflateRaw, createUnzip } from 'node:zlib';
import { type Clock, ErrorCode, systemClock, TrawlError } from '@trawl/core';
import { parseContentType } from './content-type.js';
import { DnsCache } from './dns-cache.js';
import { PhaseTimeout, type TimeoutPhase, toFetchError } from './errors.js';
import { GuardedHttpAgent, GuardedHttpsAgent, guardLookup, literalHostBlocked } from './guard.js';
import {
  DEFAULT_ACCEPT,
  DEFAULT_FREE_SOCKET_TIMEOUT_MS,
  type FetcherOptions,
  type FetchTimeouts,
} from './options.js';
import { fetchRobotsFile, type RobotsFetchOptions, type RobotsFetchResult } from './robots-fetch.js';
import { withSignature } from './signature.js';
import { type AddressPolicy, addressPolicyProblems } from './ssrf.js';

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface FetchResult {
  /** The URL as the caller passed it (no redirect is ever followed). */
  url: string;
  status: number;
  /** The response headers as received (including content-encoding / content-length). */
  headers: ResponseHeaders;
  /** Media type, lowercased, without parameters. */
  contentType: string | null;
  /** The content-type header's charset, lowercased; sniffing the body is the caller's job. */
  charset: string | null;
  /** For 3xx: Location resolved against `url` (the crawler enqueues it as a new URL). */
  location: string | null;
  /** Decoded (decompressed) body, at most `maxBodyBytes`; empty when `bodySkipped`. */
  body: Buffer;
  truncated: boolean;
  /** `acceptBody` refused the content type: the body was never read (the socket was closed). */
  bodySkipped: boolean;
  /** Body bytes received on the wire, before decompression. */
  rawBytes: number;
  /** Epoch ms from the injected clock: request start, response headers, end of body. */
  startedAt: number;
  firstByteAt: number | null;
  endedAt: number;
  etag: string | null;
  lastModified: string | null;
  /**
   * The exchange as it crossed the wire, for archiving (WARC request and response records):
   * the request line's method and the headers the client set (Node's `getHeaders()`, names
   * lowercased — Host, User-Agent, Accept, Accept-Encoding, any conditional headers; the
   * `Connection` header Node's HTTP client adds as it writes is not among them), the response's
   * HTTP version, reason phrase, headers in their received order and case, and the server's
   * address. Absent where a result was made up (tests) or the response never arrived.
   */
  wire?: WireExchange;
}

export interface WireExchange {
  request: { method: string; headers: Record<string, string | string[]> };
  httpVersion: string;
  statusText: string;
  /** Response headers as received: name/value pairs, original case and order, repeats kept. */
  rawHeaders: [string, string][];
  remoteAddress: string | null;
}

export interface FetchExtra {
  /** Extra request headers, e.g. If-None-Match / If-Modified-Since on a re-crawl. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /**
   * Asked once the response headers arrive, with the media type (lowercased, no parameters;
   * null when absent). `false`: the body is not downloaded (the connection is closed) and the
   * result has an empty body and `bodySkipped: true`. Called for every status, 3xx included.
   */
  acceptBody?: (contentType: string | null) => boolean;
}

/** One request's plan: the caller's extras and the body cap (robots.txt has its own). */
interface RequestPlan extends FetchExtra {
  maxBodyBytes: number;
}

/**
 * One HTTP GET per call, on Node's own HTTP client (no wrapper library: per request it costs
 * about half the CPU of got, and a crawler's fetching thread is busy). No retries (the queue is
 * the one layer that retries), no redirects followed (a 3xx is a result; its Location goes back
 * through normalize, scope, robots and the seen-set as a new URL), every HTTP status a result
 * rather than an error, every phase under a timeout, the decoded body capped while it streams,
 * every connection through the DNS cache and the SSRF guard (see guard.ts). Failures are
 * TrawlErrors.
 */
export class Fetcher {
  private readonly agents: { http: GuardedHttpAgent; https: GuardedHttpsAgent };
  private readonly policy: AddressPolicy;
  private readonly clock: Clock;
  private readonly maxBodyBytes: number;
  private readonly timeouts: FetchTimeouts;
  /** Every request's headers before the caller's own (Host is added by Node). */
  private readonly headers: OutgoingHttpHeaders;
  private readonly signRequest: FetcherOptions['signRequest'];
  /** The DNS cache's lookup behind the SSRF guard's filter. */
  private readonly lookup: LookupFunction;
  private closed = false;

  constructor(options: FetcherOptions) {
    validate(options);
    this.clock = options.clock ?? systemClock;
    this.maxBodyBytes = options.maxBodyBytes;
    this.timeouts = { ...options.timeouts };
    this.policy = Object.freeze({ allowNetworks: Object.freeze([...(options.ssrf?.allowNetworks ?? [])]) });
    this.lookup = guardLookup(options.lookup ?? (options.dns ?? new DnsCache({ clock: this.clock })).lookup, this.policy);
    this.headers = { 'user-agent': options.userAgent, accept: options.acceptTypes ?? DEFAULT_ACCEPT, 'accept-encoding': ACCEPT_ENCODING };
    this.signRequest = options.signRequest;

    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSocketsPerHost ?? Infinity,
      // For an agent, `timeout` is how long a free (pooled) socket may idle before it is closed.
      timeout: options.freeSocketTimeoutMs ?? DEFAULT_FREE_SOCKET_TIMEOUT_MS,
    };
    this.agents = {
      http: new GuardedHttpAgent(agentOptions, this.policy),
      https: new GuardedHttpsAgent(agentOptions, this.policy),
    };
  }

  async fetch(url: string, extra: FetchExtra = {}): Promise<FetchResult> {
    return this.request(url, { ...extra, maxBodyBytes: this.maxBodyBytes });
  }

  /**
   * GETs a robots.txt, following up to `maxRedirects` (5) redirects itself, each hop through
   * the same guard and timeouts, reading at most `maxBytes` (500 KiB). Never throws.
   */
  async fetchRobots(robotsUrl: string, options: RobotsFetchOptions = {}): Promise<RobotsFetchResult> {
    return fetchRobotsFile(
      (url, maxBytes, signal) => this.request(url, { maxBodyBytes: maxBytes, ...(signal === undefined ? {} : { signal }) }),
      robotsUrl,
      options,
    );
  }

  private async request(url: string, plan: RequestPlan): Promise<FetchResult> {
    if (this.closed) {
      throw new TrawlError(ErrorCode.FetchNetwork, 'fetcher is closed', { action: 'retry', details: { url } });
    }
    const target = checkUrl(url);
    const refused = literalHostBlocked(target, this.policy);
    if (refused !== null) throw refused;
    const startedAt = this.clock.now();
    const { maxBodyBytes, acceptBody, signal } = plan;
    const { timeouts } = this;
    const secure = target.protocol === 'https:';

    return new Promise<FetchResult>((resolve, reject) => {
      let response: IncomingMessage | undefined;
      let decoder: Transform | null = null;
      let remoteAddress: string | null = null;
      let firstByteAt: number | null = null;
      let rawBytes = 0;
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      let bodySkipped = false;
      let settled = false;
      /** The timer of the phase in progress (connecting, sending, waiting for the headers). */
      let phaseTimer: NodeJS.Timeout | undefined;
      const deadline = setTimeout(() => abandon(new PhaseTimeout('request')), timeouts.totalMs);

      const request = (secure ? httpsRequest : httpRequest)({
        protocol: target.protocol,
        hostname: target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname,
        port: target.port === '' ? undefined : Number(target.port),
        path: `${target.pathname}${target.search}`,
        method: 'GET',
        agent: secure ? this.agents.https : this.agents.http,
        headers: withSignature(this.signRequest, target.href, { ...this.headers, ...plan.headers }),
        // Down to net.connect through the agent; node skips it for IP-literal hosts, hence the literal check.
        lookup: this.lookup,
      });

      const cleanUp = (): void => {
        clearTimeout(deadline);
        clearTimeout(phaseTimer);
        signal?.removeEventListener('abort', onAbort);
        // Settled before the body's end (the cap, a skipped type, an error): the decoder's
        // pending output is not wanted.
        if (decoder !== null && !decoder.writableFinished) decoder.destroy();
      };
      /** Settles the exchange once: later outcomes (a destroyed socket's error, a late end) do nothing. */
      const settle = (then: () => void): void => {
        if (settled) return;
        settled = true;
        cleanUp();
        then();
      };
      const succeed = (): void =>
        settle(() => {
          if (response === undefined) {
            reject(toFetchError(new Error('the response ended before its headers'), url, timeouts));
            return;
          }
          resolve(buildResult(url, response, { request: sentRequest(request), remoteAddress }, {
            body: Buffer.concat(chunks, size),
            truncated,
            bodySkipped,
            rawBytes,
            startedAt,
            firstByteAt,
            endedAt: this.clock.now(),
          }));
        });
      const fail = (error: unknown): void => settle(() => reject(toFetchError(error, url, timeouts, signal)));
      /** Ends the exchange with `error` and tears the socket down (nothing more is read). */
      const abandon = (error: unknown): void => {
        fail(error);
        request.destroy();
      };
      /** Ends the exchange with what arrived so far; the rest of the body is never read. */
      const stopReading = (): void => {
        succeed();
        request.destroy();
      };
      const startPhase = (phase: TimeoutPhase, ms: number): void => {
        clearTimeout(phaseTimer);
        phaseTimer = setTimeout(() => abandon(new PhaseTimeout(phase)), ms);
      };
      const onAbort = (): void => abandon(signal?.reason ?? new Error('aborted'));
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });

      // Any silence on the socket, whatever the phase.
      request.setTimeout(timeouts.idleMs, () => abandon(new PhaseTimeout('socket')));
      // Stays attached after settling: a late error from a destroyed request must not be unhandled.
      request.on('error', fail);
      request.once('socket', (socket: Socket) => {
        const sent = () => startPhase('response', timeouts.firstByteMs);
        const whenSent = () => (request.writableFinished ? sent() : request.once('finish', sent));
        if (!socket.connecting) {
          // A pooled keep-alive socket: the request goes out at once.
          whenSent();
          return;
        }
        // A new connection: lookup, connect and (https) the handshake each get connectMs.
        const named = isIP(request.host) === 0;
        startPhase(named ? 'lookup' : 'connect', timeouts.connectMs);
        if (named) socket.once('lookup', () => startPhase('connect', timeouts.connectMs));
        socket.once(secure ? 'secureConnect' : 'connect', () => {
          startPhase('send', timeouts.connectMs);
          whenSent();
        });
        if (secure) socket.once('connect', () => startPhase('secureConnect', timeouts.connectMs));
      });

      request.once('response', (incoming: IncomingMessage) => {
        clearTimeout(phaseTimer);
        response = incoming;
        // Read now: a keep-alive socket goes back to the pool once the body has been read.
        remoteAddress = incoming.socket?.remoteAddress ?? null;
        firstByteAt = this.clock.now();
        incoming.on('error', fail);
        incoming.once('close', () => {
          if (incoming.complete) return;
          fail(Object.assign(new Error('the response stream closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
        });
        if (acceptBody !== undefined) {
          let accepted: boolean;
          try {
            accepted = acceptBody(parseContentType(incoming.headers['content-type']).contentType);
          } catch (error) {
            // The caller's own error, as it threw it.
            settle(() => reject(error));
            request.destroy();
            return;
          }
          if (!accepted) {
            // Not a type we want: keep the headers, never download the body.
            bodySkipped = true;
            stopReading();
            return;
          }
        }
        const encoding = contentEncoding(incoming.headers['content-encoding']);
        // The decoded body, capped while it streams: a 5 GB body costs maxBodyBytes, not 5 GB,
        // and a decompression bomb stops at the cap too (zlib emits its output in small chunks).
        const keep = (chunk: Buffer): void => {
          if (settled) return;
          const room = maxBodyBytes - size;
          if (chunk.length <= room) {
            chunks.push(chunk);
            size += chunk.length;
            return;
          }
          if (room > 0) {
            chunks.push(chunk.subarray(0, room));
            size += room;
          }
          truncated = true;
          stopReading();
        };
        incoming.on('data', (chunk: Buffer) => {
          rawBytes += chunk.length;
          if (encoding === null) {
            keep(chunk);
            return;
          }
          if (decoder === null) {
            decoder = makeDecoder(encoding, chunk);
            decoder.on('data', keep);
            decoder.once('end', succeed);
            decoder.on('error', abandon);
          }
          // Backpressure: the wire is read no faster than the decoder's output is taken, so a
          // bomb stops at the cap having read little more than the cap's worth of input.
          const active = decoder;
          if (!active.write(chunk)) {
            incoming.pause();
            active.once('drain', () => incoming.resume());
          }
        });
        incoming.once('end', () => {
          // An encoded body that is empty (a 304, a HEAD-like reply) has nothing to decode.
          if (decoder === null) succeed();
          else decoder.end();
        });
      });
      request.end();
    });
  }

  /** Destroys the keep-alive agents (and with them every pooled and in-flight socket). */
  close(): void {
    this.closed = true;
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** Content codings the fetcher decodes (what it offers in Accept-Encoding). */
const ACCEPT_ENCODING = 'gzip, deflate, br';
type ContentCoding = 'gzip' | 'deflate' | 'br';

/** The response's content coding if it is one we decode; anything else is kept as it came. */
function contentEncoding(header: string | undefined): ContentCoding | null {
  const coding = (header ?? '').trim().toLowerCase();
  return coding === 'gzip' || coding === 'deflate' || coding === 'br' ? coding : null;
}

/**
 * The decoder for a body's coding, chosen on its first bytes: "deflate" is meant to be zlib
 * (RFC 9110) but some servers send raw deflate, told apart by the zlib header's method nibble.
 */
function makeDecoder(coding: ContentCoding, first: Buffer): Transform {
  if (coding === 'br') return createBrotliDecompress();
  if (coding === 'deflate' && first.length > 0 && ((first[0] as number) & 0x08) === 0) return createInflateRaw();
  return createUnzip();
}

/** The request line's method and the headers the client set, values as strings. */
function sentRequest(request: ClientRequest): WireExchange['request'] {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.getHeaders())) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return { method: request.method, headers };
}

function buildResult(
  url: string,
  response: IncomingMessage,
  sent: Pick<WireExchange, 'request' | 'remoteAddress'>,
  rest: Pick<FetchResult, 'body' | 'truncated' | 'bodySkipped' | 'rawBytes' | 'startedAt' | 'firstByteAt' | 'endedAt'>,
): FetchResult {
  const headers: ResponseHeaders = { ...response.headers };
  const status = response.statusCode ?? 0;
  const { contentType, charset } = parseContentType(headers['content-type']);
  const location = firstValue(headers['location']);
  const rawHeaders: [string, string][] = [];
  for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) rawHeaders.push([response.rawHeaders[i] as string, response.rawHeaders[i + 1] as string]);
  return {
    url,
    status,
    headers,
    contentType,
    charset,
    location: status >= 300 && status < 400 && location !== null ? resolveLocation(location, url) : null,
    etag: firstValue(headers['etag']),
    lastModified: firstValue(headers['last-modified']),
    wire: { ...sent, httpVersion: response.httpVersion, statusText: response.statusMessage ?? '', rawHeaders },
    ...rest,
  };
}

function firstValue(value: string | string[] | undefined): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? null : first;
}

function resolveLocation(location: string, base: string): string | null {
  try {
    return new URL(location.trim(), base).href;
  } catch {
    return null;
  }
}

function checkUrl(url: string): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch (error) {
    throw new TrawlError(ErrorCode.UrlInvalid, `not a URL: ${JSON.stringify(url.slice(0, 200))}`, {
      action: 'skip',
      cause: error,
    });
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new TrawlError(ErrorCode.UrlScheme, `cannot fetch ${target.protocol} URLs: ${url.slice(0, 200)}`, {
      action: 'skip',
    });
  }
  return target;
}

function validate(options: FetcherOptions): void {
  const problems: string[] = [];
  if (typeof options.userAgent !== 'string' || options.userAgent.trim() === '') problems.push('userAgent is empty');
  for (const [name, value] of Object.entries(options.timeouts ?? {})) {
    if (!Number.isFinite(value) || value <= 0) problems.push(`timeouts.${name} must be > 0 ms, got ${value}`);
  }
  for (const name of ['connectMs', 'firstByteMs', 'idleMs', 'totalMs'] as const) {
    if (options.timeouts?.[name] === undefined) problems.push(`timeouts.${name} is required`);
  }
  if (!Number.isSafeInteger(options.maxBodyBytes) || options.maxBodyBytes <= 0) {
    problems.push(`maxBodyBytes must be a positive integer, got ${options.maxBodyBytes}`);
  }
  if (options.maxSocketsPerHost !== undefined && !(options.maxSocketsPerHost >= 1)) {
    problems.push(`maxSocketsPerHost must be >= 1, got ${options.maxSocketsPerHost}`);
  }
  if (options.ssrf !== undefined) problems.push(...addressPolicyProblems(options.ssrf));
  if (options.dns !== undefined && options.lookup !== undefined) problems.push('pass either dns or lookup, not both');
  if (problems.length > 0) {
    throw new TrawlError(ErrorCode.ConfigInvalid, `Fetcher: ${problems.join('; ')}`, { action: 'fatal' });
  }
}
