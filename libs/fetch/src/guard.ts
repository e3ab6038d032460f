import type { LookupAddress, LookupOptions } from 'node:dns';
import { Agent as HttpAgent, type AgentOptions, type ClientRequestArgs } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions, type RequestOptions } from 'node:https';
import { isIP, type LookupFunction, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TrawlError } from '@trawl/core';
import { FetchErrorCode, fetchError } from './errors.js';
import { type AddressPolicy, blockedReason } from './ssrf.js';

/**
 * The SSRF guard, enforced on the address actually connected to, in three places:
 *  1. the DNS lookup every new connection goes through drops refused addresses (so a name that
 *     resolves to 10.0.0.5, or to a public and a private address, never reaches the private one);
 *  2. a URL whose host is an IP literal (no lookup happens) is checked before the request;
 *  3. every socket the agents open is checked on 'connect' against its `remoteAddress` and
 *     destroyed before a byte is written if refused. This one alone would be enough; 1 and 2
 *     keep refused addresses from even getting a SYN, and give better messages.
 */

export function ssrfBlockedError(
  facts: {
    address: string;
    reason: string;
    host?: string;
    url?: string;
    stage: 'lookup' | 'literal' | 'connect';
    refused?: ReadonlyArray<{ address: string; reason: string }>;
  },
): TrawlError {
  const target = facts.url ?? facts.host ?? facts.address;
  const via = facts.host !== undefined && facts.host !== facts.address ? ` (${facts.host} resolved to it)` : '';
  return fetchError(
    FetchErrorCode.SsrfBlocked,
    `refusing to connect to ${facts.address}${via}: ${facts.reason} address, not globally routable unicast`,
    { action: 'skip', details: { ...facts, target } },
  );
}

/** Stage 2: the check for a URL whose host is an IP literal. Null when allowed. */
export function literalHostBlocked(url: URL, policy: AddressPolicy): TrawlError | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) === 0) return null;
  const reason = blockedReason(host, policy);
  return reason === null ? null : ssrfBlockedError({ address: host, reason, url: url.href, stage: 'literal' });
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Stage 1: wraps a lookup so that only allowed addresses come out of it. Always asks the inner
 * lookup for every address and answers in the shape the caller asked for (`all` or first).
 */
export function guardLookup(inner: LookupFunction, policy: AddressPolicy): LookupFunction {
  const guarded = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const wanted = typeof options === 'object' && options !== null ? options : {};
    inner(hostname, { ...wanted, all: true }, (error, result, family) => {
      if (error) {
        callback(error, '');
        return;
      }
      const addresses: LookupAddress[] =
        typeof result === 'string' ? [{ address: result, family: family ?? isIP(result) }] : [...result];
      if (addresses.length === 0) {
        const empty = Object.assign(new Error(`lookup ENOTFOUND ${hostname}`), {
          code: 'ENOTFOUND',
          hostname,
          syscall: 'lookup',
        });
        callback(empty, '');
        return;
      }
      const allowed: LookupAddress[] = [];
      const refused: Array<{ address: string; reason: string }> = [];
      for (const entry of addresses) {
        const reason = blockedReason(entry.address, policy);
        if (reason === null) allowed.push(entry);
        else refused.push({ address: entry.address, reason });
      }
      const first = allowed[0];
      if (first === undefined) {
        const [worst = { address: '?', reason: 'unknown' }] = refused;
        callback(ssrfBlockedError({ ...worst, host: hostname, stage: 'lookup', refused }), '');
        return;
      }
      if (wanted.all === true) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
  return guarded as LookupFunction;
}

/** Stage 3: refuse the socket on 'connect' if its peer is refused, before anything is written. */
export function guardSocket(socket: Socket, policy: AddressPolicy): void {
  // Prepended: node queues the request bytes written while connecting on a 'connect' listener,
  // and TLS starts its handshake from one; ours runs first, and a destroyed socket writes nothing.
  socket.prependOnceListener('connect', () => {
    const address = socket.remoteAddress;
    // With the port: an allowed network limited to some ports is enforced here, where the port is known.
    const reason = address === undefined ? 'unknown' : blockedReason(address, policy, socket.remotePort);
    if (reason === null) return;
    socket.destroy(ssrfBlockedError({ address: address ?? '?', reason, stage: 'connect' }));
  });
}

/** Keep-alive agents whose every new socket goes through `guardSocket`. */
export class GuardedHttpAgent extends HttpAgent {
  constructor(
    options: AgentOptions,
    private readonly policy: AddressPolicy,
  ) {
    super(options);
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    if (socket instanceof Socket) guardSocket(socket, this.policy);
    return socket;
  }
}

export class GuardedHttpsAgent extends HttpsAgent {
  constructor(
    options: HttpsAgentOptions,
    private readonly policy: AddressPolicy,
  ) {
    super(options);
  }

  override createConnection(
    options: RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    if (socket instanceof Socket) guardSocket(socket, this.policy); // a TLSSocket is a Socket
    return socket;
  }
}
