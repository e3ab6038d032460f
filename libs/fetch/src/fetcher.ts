import type { ClientRequest, IncomingMessage } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { type Clock, ErrorCode, isTrawlError, systemClock, TrawlError } from '@trawl/core';
import got, { type Got, type NormalizedOptions } from 'got';
import { parseContentType } from './content-type.js';
import { DnsCache } from './dns-cache.js';
import { FetchErrorCode, fetchError, toFetchError } from './errors.js';
import { useCreateNativeRequestOptions } from './got-native-options.js';
import { GuardedHttpAgent, GuardedHttpsAgent, guardLookup, literalHostBlocked } from './guard.js';
import {
  DEFAULT_ACCEPT,
  DEFAULT_FREE_SOCKET_TIMEOUT_MS,
  type FetcherOptions,
  type FetchTimeouts,
  type ProxyRequestEvent,
} from './options.js';
import { type ExitAgents, exitAgents, proxyAddressProblem } from './proxy-agents.js';
import { DIRECT, ProxyRouter, proxyOptionsProblems, type Route } from './proxy-route.js';
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
  /** With proxies configured: the exit the request went through (a proxy's name, or `none` for direct). */
  proxy?: string;
  /**
   * The exchange as it crossed the wire, for archiving (WARC request and response records):
   * the request line's method and the headers the client set (Node's `getHeaders()`, names
   * lowercased — Host, User-Agent, Accept, Accept-Encoding, any conditional headers; the
   * `Connection` header Node's HTTP client adds as it writes is not among them), the response's
   * HTTP version, reason phrase, headers in their received order and case, and the server's
   * address (null through a proxy: the socket's peer is the proxy). Absent where a result was made up (tests) or the response never arrived.
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
  /** Proxy tiers the host has been moved up from its planned one after being blocked (default 0). */
  tierLevel?: number;
}

/** One request's plan: the caller's extras and the body cap (robots.txt has its own). */
interface RequestPlan extends FetchExtra {
  maxBodyBytes: number;
}

/**
 * One HTTP GET per call, with got 14 in stream mode. No retries (the queue is the one layer that
 * retries), no redirects followed (a 3xx is a result; its Location goes back through normalize,
 * scope, robots and the seen-set as a new URL), every HTTP status a result rather than an error,
 * every phase under a timeout, the decoded body capped while it streams, every connection
 * through the DNS cache and the SSRF guard (see guard.ts). Failures are TrawlErrors.
 */
export class Fetcher {
  private readonly client: Got;
  private readonly agents: { http: GuardedHttpAgent; https: GuardedHttpsAgent };
  private readonly policy: AddressPolicy;
  private readonly clock: Clock;
  private readonly maxBodyBytes: number;
  private readonly timeouts: FetchTimeouts;
  /** With proxies: which exit each host's requests take, and each proxy's agents. */
  private readonly router: ProxyRouter | null = null;
  private readonly exits = new Map<string, ExitAgents>();
  private readonly onProxyRequest: ((event: ProxyRequestEvent) => void) | undefined;
  private readonly guardedLookup: LookupFunction;
  /** The lookup fetches resolve through (the DNS cache and its pinned hosts), before the address rule. */
  private readonly lookup: LookupFunction;
  private closed = false;

  constructor(options: FetcherOptions) {
    validate(options);
    const { timeouts, signRequest } = options;
    this.clock = options.clock ?? systemClock;
    this.maxBodyBytes = options.maxBodyBytes;
    this.timeouts = { ...timeouts };
    this.policy = Object.freeze({ allowNetworks: Object.freeze([...(options.ssrf?.allowNetworks ?? [])]) });
    const lookup = options.lookup ?? (options.dns ?? new DnsCache({ clock: this.clock })).lookup;
    this.lookup = lookup;

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
    const guardedLookup = guardLookup(lookup, this.policy);
    this.guardedLookup = guardedLookup;
    this.onProxyRequest = options.onProxyRequest;
    if (options.proxies !== undefined && options.proxies.proxies.length > 0) {
      this.router = new ProxyRouter(options.proxies);
      const guard = { lookup: guardedLookup, policy: this.policy, connectMs: timeouts.connectMs };
      // One pair of keep-alive agents per proxy: a pooled socket is a tunnel through one proxy.
      for (const proxy of options.proxies.proxies) this.exits.set(proxy.name, exitAgents(proxy, agentOptions, guard));
    }

    // got's own version of it costs V8 a new object shape per request (see got-native-options.ts).
    useCreateNativeRequestOptions();
    this.client = got.extend({
      agent: this.agents,
      http2: false,
      decompress: true,
      followRedirect: false,
      // Retries belong to the queue alone. got's default is 2; in stream mode it only retries
      // when a 'retry' listener exists (we add none), and limit 0 makes that explicit.
      retry: { limit: 0 },
      throwHttpErrors: false,
      // got has no timeouts by default. Each phase gets one (got's core/timed-out.js):
      // lookup/connect/secureConnect until the socket is ready, send until the request is
      // written, response until the headers arrive, socket for any silence (so the first-byte
      // wait is min(firstByteMs, idleMs)), request for the whole exchange up to the last body byte.
      timeout: {
        lookup: timeouts.connectMs,
        connect: timeouts.connectMs,
        secureConnect: timeouts.connectMs,
        send: timeouts.connectMs,
        response: timeouts.firstByteMs,
        socket: timeouts.idleMs,
        request: timeouts.totalMs,
      },
      headers: {
        'user-agent': options.userAgent,
        accept: options.acceptTypes ?? DEFAULT_ACCEPT,
        // Explicit: got would offer zstd too on a Node that has it, which the fetcher's
        // results and tests do not cover.
        'accept-encoding': ACCEPT_ENCODING,
      },
      // Passed to every request as `lookup`, down to net.connect (got's options.js
      // createNativeRequestOptions); node skips it for IP-literal hosts, hence the literal check.
      dnsLookup: guardedLookup,
      hooks: {
        // Signed where got has built the request's final headers, just before it is sent.
        beforeRequest: signRequest === undefined ? [] : [(request) => signHeaders(signRequest, request)],
      },
    });
  }

  /**
   * The server address a request to `hostname` connects to directly (the first address the SSRF
   * guard allows), answered by the same DNS cache the requests use: asking before a request costs
   * no second lookup, and a failure is cached for the request to meet. Null when the name does not
   * resolve (or resolves to nothing allowed): the request then fails as it would have. Through a
   * proxy the name is resolved here all the same: the server is the same whatever the route.
   */
  serverAddress(hostname: string): Promise<string | null> {
    const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    if (isIP(host) !== 0) return Promise.resolve(host);
    return new Promise((resolve) => {
      this.guardedLookup(host, {}, (error, address) => resolve(error || typeof address !== 'string' || address === '' ? null : address));
    });
  }

  /**
   * Every address `hostname` resolves to as this fetcher's requests would resolve it (its DNS
   * cache, answered from memory within the record's TTL, and the pinned hosts), the address rule
   * not applied: for a caller that refuses early with its reason (the renderer's requests). The
   * fetcher's own guard still checks every connection.
   */
  resolveAll(hostname: string): Promise<string[]> {
    return new Promise((resolve, reject) => {
      this.lookup(hostname, { all: true }, (error, addresses) => {
        if (error) reject(error);
        else resolve((addresses as unknown as LookupAddress[]).map((entry) => entry.address));
      });
    });
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
      (url, maxBytes, signal) => this.request(url, { maxBodyBytes: maxBytes, tierLevel: options.tierLevel, ...(signal === undefined ? {} : { signal }) }),
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
    const { router } = this;
    if (router === null) return this.exchange(target, url, plan, null);
    // A proxy that fails before the target is reached is taken out, and the request goes on
    // through the next member of the host's tier: the target never saw it, so this is no retry.
    const avoid = new Set<string>();
    let lastFailure: TrawlError | null = null;
    for (;;) {
      const route = router.route(target.hostname, this.clock.now(), avoid, plan.tierLevel ?? 0);
      if (route.kind === 'unavailable') {
        this.tellProxyRequest({ tier: route.tier, proxy: '', outcome: 'unavailable' });
        throw proxyUnavailable(url, route, lastFailure);
      }
      try {
        const result = await this.exchange(target, url, plan, route.exit);
        router.succeeded(route.exit);
        this.tellProxyRequest({ tier: route.tier, proxy: route.exit, outcome: 'ok' });
        return result;
      } catch (error) {
        const proxyFault = isTrawlError(error) && error.details?.proxyFault === true;
        this.tellProxyRequest({ tier: route.tier, proxy: route.exit, outcome: proxyFault ? 'proxy-failed' : 'error' });
        if (!proxyFault || signalAborted(plan.signal)) throw error;
        router.failed(route.exit, this.clock.now());
        avoid.add(route.exit);
        lastFailure = error as TrawlError;
      }
    }
  }

  /** One GET, directly (`exit` null or `none`) or through the named proxy. */
  private async exchange(target: URL, url: string, plan: RequestPlan, exit: string | null): Promise<FetchResult> {
    const proxied = exit !== null && exit !== DIRECT;
    const agent = proxied ? this.exits.get(exit) : undefined;
    const startedAt = this.clock.now();
    const { maxBodyBytes, acceptBody, signal } = plan;
    const { timeouts } = this;

    return new Promise<FetchResult>((resolve, reject) => {
      const stream = this.client.stream(target, {
        ...(agent === undefined ? {} : { agent }),
        ...(plan.headers === undefined ? {} : { headers: plan.headers }),
        ...(signal === undefined ? {} : { signal }),
      });

      let native: IncomingMessage | undefined;
      let sent: WireExchange['request'] | undefined;
      let remoteAddress: string | null = null;
      let firstByteAt: number | null = null;
      let rawBytes = 0;
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      let bodySkipped = false;
      let settled = false;

      /** Settles the exchange once: later outcomes (a destroyed stream's error, a late end) do nothing. */
      const settle = (then: () => void): void => {
        if (settled) return;
        settled = true;
        then();
      };
      const succeed = (): void =>
        settle(() => {
          if (native === undefined || sent === undefined) {
            reject(toFetchError(new Error('the response ended before its headers'), url, timeouts));
            return;
          }
          const result = buildResult(url, native, { request: sent, remoteAddress: proxied ? null : remoteAddress }, {
            body: Buffer.concat(chunks, size),
            truncated,
            bodySkipped,
            rawBytes,
            startedAt,
            firstByteAt,
            endedAt: this.clock.now(),
          });
          if (exit !== null) result.proxy = exit;
          resolve(result);
        });
      const fail = (error: unknown): void => settle(() => reject(toFetchError(error, url, timeouts, signal)));
      /** Ends the exchange with what arrived so far; tearing the socket down, the rest is never read. */
      const stopReading = (): void => {
        succeed();
        stream.destroy();
      };

      // The raw response, before got's decompression: its headers are the wire headers and
      // its data events count the bytes that crossed the network.
      stream.once('request', (request: ClientRequest) => {
        sent = sentRequest(request);
        request.once('response', (response: IncomingMessage) => {
          native = response;
          // Read now: a keep-alive socket goes back to the pool once the body has been read.
          remoteAddress = response.socket?.remoteAddress ?? null;
          firstByteAt = this.clock.now();
          response.on('data', (chunk: Buffer) => {
            rawBytes += chunk.length;
          });
          if (acceptBody === undefined) return;
          let accepted: boolean;
          try {
            accepted = acceptBody(parseContentType(response.headers['content-type']).contentType);
          } catch (error) {
            // The caller's own error, as it threw it.
            settle(() => reject(error));
            stream.destroy();
            return;
          }
          if (accepted) return;
          // Not a type we want: keep the headers, never download the body.
          bodySkipped = true;
          stopReading();
        });
      });
      // The decoded body, capped while it streams: a 5 GB body costs maxBodyBytes, not 5 GB, and
      // a decompression bomb stops at the cap too: got reads its decompressed stream only as
      // fast as we take it, and zlib emits its output in small chunks.
      stream.on('data', (chunk: Buffer) => {
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
      });
      // got leaves a stream open after its end, and with it its listeners: on the caller's signal
      // (an AbortSignal.any composite is kept from collection while it has one), on the socket
      // the request came through (a pooled keep-alive socket's). Either would hold the request,
      // and through the data listener above its whole body, as long as the signal or the socket
      // lives: for a worker's life, for every page. Destroyed once read, it lets go of them; the
      // socket is back in the agent's pool already (the response's end released it).
      stream.once('end', () => {
        succeed();
        stream.destroy();
      });
      // Stays attached after settling: a late error from a destroyed stream must not be unhandled.
      stream.on('error', fail);
      stream.once('close', () => {
        fail(Object.assign(new Error('the response stream closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
      });
    });
  }

  private tellProxyRequest(event: ProxyRequestEvent): void {
    try {
      this.onProxyRequest?.(event);
    } catch {
      // A metrics listener must not fail a fetch.
    }
  }

  /**
   * The proxy tier a host's requests go through when moved `level` tiers up (`none`: direct; null
   * without proxies), and whether a tier above it is left for a blocked host to move to.
   */
  tierOf(host: string, level = 0): { tier: string | null; canEscalate: boolean } {
    const { router } = this;
    if (router === null) return { tier: null, canEscalate: false };
    return { tier: router.tierFor(host, level), canEscalate: router.canEscalate(host, level) };
  }

  /** Proxies taken out of their tier after failing, and until when (epoch ms); empty without proxies. */
  proxiesOut(): Array<{ exit: string; until: number }> {
    return this.router?.outOfService(this.clock.now()) ?? [];
  }

  /** Destroys the keep-alive agents (and with them every pooled and in-flight socket). */
  close(): void {
    this.closed = true;
    this.agents.http.destroy();
    this.agents.https.destroy();
    for (const agents of this.exits.values()) {
      agents.http.destroy();
      agents.https.destroy();
    }
  }
}

const signalAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

/** Every proxy of the host's tier is out: try again when the first comes back. */
function proxyUnavailable(url: string, route: Extract<Route, { kind: 'unavailable' }>, last: TrawlError | null): TrawlError {
  const why = last === null ? '' : ` (last: ${last.message})`;
  return fetchError(FetchErrorCode.ProxyUnavailable, `fetch of ${url}: every proxy of tier ${route.tier} is out after failing${why}`, {
    action: 'retry',
    retryAt: route.retryAt,
    ...(last === null ? {} : { cause: last }),
    details: { url, tier: route.tier, retryAt: route.retryAt },
  });
}

/** Content codings the fetcher offers and got decodes. */
const ACCEPT_ENCODING = 'gzip, deflate, br';

/** Adds `sign`'s headers to a request got is about to send (the Web Bot Auth hook). */
function signHeaders(sign: NonNullable<FetcherOptions['signRequest']>, request: NormalizedOptions): void {
  Object.assign(request.headers, withSignature(sign, String(request.url), request.headers));
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
  if (options.proxies !== undefined) {
    const proxyProblems = proxyOptionsProblems(options.proxies);
    problems.push(...proxyProblems);
    if (proxyProblems.length === 0 && (options.ssrf === undefined || addressPolicyProblems(options.ssrf).length === 0)) {
      const policy = { allowNetworks: options.ssrf?.allowNetworks ?? [] };
      for (const proxy of options.proxies.proxies) {
        const problem = proxyAddressProblem(proxy, policy);
        if (problem !== null) problems.push(problem);
      }
    }
  }
  if (problems.length > 0) {
    throw new TrawlError(ErrorCode.ConfigInvalid, `Fetcher: ${problems.join('; ')}`, { action: 'fatal' });
  }
}
