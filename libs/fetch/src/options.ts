import type { LookupFunction } from 'node:net';
import type { Clock } from '@trawl/core';
import type { DnsCache } from './dns-cache.js';
import type { ProxyOptions } from './proxy-route.js';
import type { AddressPolicy } from './ssrf.js';

export interface FetchTimeouts {
  /** DNS lookup, TCP connect and TLS handshake, each. */
  connectMs: number;
  /** From the request being written to the response headers arriving. */
  firstByteMs: number;
  /** Longest silence on the socket, at any point of the exchange. */
  idleMs: number;
  /** The whole fetch, from start to the last body byte. */
  totalMs: number;
}

export interface FetchOptions {
  userAgent: string;
  timeouts: FetchTimeouts;
  /** Cap on the decoded body: reading stops there, what arrived is kept, `truncated` is set. */
  maxBodyBytes: number;
  /** The Accept header. Default `text/html,application/xhtml+xml;q=0.9,*\/*;q=0.5`. */
  acceptTypes?: string;
  /** Keep-alive agent: concurrent sockets per origin. Default: unlimited (politeness caps it upstream). */
  maxSocketsPerHost?: number;
  /**
   * How long an idle keep-alive socket is kept. Default 4000: below the 5 s that Node and
   * Apache servers default to (and lowered further by a server's `Keep-Alive: timeout=` hint),
   * so we rarely reuse a socket the server is closing.
   */
  freeSocketTimeoutMs?: number;
  /**
   * Headers to add to each request (every hop, robots.txt included), from the request about to be
   * sent: how requests are signed (`webBotAuthHeaders`). Default: none.
   */
  signRequest?: (method: string, url: string, headers: Readonly<Record<string, unknown>>) => Record<string, string>;
}

export interface FetcherOptions extends FetchOptions {
  /** Stamps startedAt / firstByteAt / endedAt. Default: the system clock. */
  clock?: Clock;
  /**
   * The DNS cache every connection resolves through (robots.txt included). Pass one to share it
   * (one per process). Default: a DnsCache of this Fetcher's own, on `clock`.
   */
  dns?: DnsCache;
  /**
   * A lookup function instead of `dns` (the synthetic web's resolver plugs in here). Must honour
   * `options.all`. The SSRF guard filters its answers like the cache's. Not with `dns`.
   */
  lookup?: LookupFunction;
  /**
   * The SSRF guard: addresses outside globally routable unicast are refused (ERR_SSRF_BLOCKED,
   * action skip) unless inside `allowNetworks`. Default `{ allowNetworks: [] }`: on, nothing
   * private allowed. A crawl of the synthetic web on loopback needs `['127.0.0.0/8']`.
   */
  ssrf?: AddressPolicy;
  /**
   * Proxies, their tiers and per-domain rules (see proxy-route.ts). Default: none, every
   * request direct. The SSRF guard still judges every target (resolved and checked before the
   * proxy hears of it) and every proxy's own address.
   */
  proxies?: ProxyOptions;
  /**
   * Told of every request routed by `proxies` (each exit tried counts once), for metrics.
   * Never throws into the fetch: a listener's error is ignored.
   */
  onProxyRequest?: (event: ProxyRequestEvent) => void;
}

/**
 * One request through the proxy router: its tier, the exit tried (`none`: direct; '' when the
 * tier had none left), and how it ended there: `ok` (a response), `error` (the target's failure,
 * or the guard's), `proxy-failed` (the proxy's: the request went on to the next member), or
 * `unavailable` (every member of the tier out).
 */
export interface ProxyRequestEvent {
  tier: string;
  proxy: string;
  outcome: 'ok' | 'error' | 'proxy-failed' | 'unavailable';
}

export const DEFAULT_ACCEPT = 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5';
export const DEFAULT_FREE_SOCKET_TIMEOUT_MS = 4_000;
