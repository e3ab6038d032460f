import type { Agent as HttpAgent, AgentOptions, ClientRequest, ClientRequestArgs } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TrawlError } from '@trawl/core';
import { HttpProxyAgent, HttpsProxyAgent } from 'hpagent';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { FetchErrorCode, fetchError } from './errors.js';
import { ssrfBlockedError } from './guard.js';
import type { ProxyExitOptions } from './proxy-route.js';
import { type AddressPolicy, blockedReason } from './ssrf.js';

/**
 * Keep-alive agents that reach targets through one proxy: hpagent's for http:// and https://
 * proxies (a CONNECT tunnel for every target, plain http:// pages too, so the proxy sees no
 * request line and cannot rewrite or cache one), socks-proxy-agent's for socks5://.
 *
 * Before the proxy hears of a target, the target's host is resolved through the guarded lookup
 * (the DNS cache under the SSRF guard) and its address checked, port included; the proxy is then
 * told the checked address, not the name, so it cannot be pointed elsewhere by a DNS answer of
 * its own (TLS still names the host: SNI and the certificate check use the name). The proxy's
 * own address goes through the same guard: by name through the guarded lookup, as an IP literal
 * when the Fetcher is built.
 *
 * Credentials live only in non-enumerable properties of the agents, so no log line or error
 * that serializes a request's options (got's errors carry them) can show them.
 */

export interface ProxyGuard {
  /** The guarded lookup (DNS cache, refused addresses dropped). */
  lookup: LookupFunction;
  policy: AddressPolicy;
  /** How long connecting to the proxy and setting up the tunnel may stay silent. */
  connectMs: number;
}

export interface ExitAgents {
  http: HttpAgent;
  /** got's typing wants an https.Agent; socks-proxy-agent's serves both (it is an http.Agent that speaks TLS itself). */
  https: HttpsAgent;
}

/** A proxy as messages show it: its name and URL without credentials. */
export function proxyLabel(proxy: ProxyExitOptions): string {
  try {
    const url = new URL(proxy.url);
    const auth = url.username !== '' || url.password !== '' ? '***@' : '';
    return `${proxy.name} (${url.protocol}//${auth}${url.host})`;
  } catch {
    return proxy.name;
  }
}

/** Why the SSRF guard refuses a proxy given as an IP literal, or null (names are checked when resolved). */
export function proxyAddressProblem(proxy: ProxyExitOptions, policy: AddressPolicy): string | null {
  let url: URL;
  try {
    url = new URL(proxy.url);
  } catch {
    return null;
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) === 0) return null;
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : url.protocol === 'socks5:' ? 1080 : 80);
  const reason = blockedReason(host, policy, port);
  if (reason === null) return null;
  const entry = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return `proxy ${proxyLabel(proxy)} is at a ${reason} address, which the SSRF guard refuses: allow it in ssrf.allowNetworks (e.g. ${entry})`;
}

/** The agents of one proxy. */
export function exitAgents(proxy: ProxyExitOptions, agentOptions: AgentOptions, guard: ProxyGuard): ExitAgents {
  const url = new URL(proxy.url);
  if (url.protocol === 'socks5:') {
    return { http: new GuardedSocksAgent(proxy, url, agentOptions, guard), https: new GuardedSocksAgent(proxy, url, agentOptions, guard) as unknown as HttpsAgent };
  }
  return { http: new TunnelHttpAgent(proxy, url, agentOptions, guard), https: new TunnelHttpsAgent(proxy, url, agentOptions, guard) };
}

/**
 * What hpagent reads of its proxy (`protocol`, `hostname`, `port`, `username`, `password`), as a
 * plain object whose credentials are non-enumerable: a URL object would print them.
 */
function endpoint(url: URL): URL {
  // An IPv6 literal without its brackets: hpagent hands `hostname` to http.request as the host.
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const proxy = { protocol: url.protocol, hostname, port: url.port, href: `${url.protocol}//${url.host}` };
  Object.defineProperty(proxy, 'username', { value: url.username, enumerable: false });
  Object.defineProperty(proxy, 'password', { value: url.password, enumerable: false });
  return proxy as unknown as URL;
}

/** What an agent keeps of its proxy for messages: never the URL. */
interface ExitLabel {
  name: string;
  label: string;
}
const labelOf = (proxy: ProxyExitOptions): ExitLabel => ({ name: proxy.name, label: proxyLabel(proxy) });

type PinCallback = (error: Error | null, address: string) => void;

/** Resolves and checks the target before the proxy hears of it: the address the proxy must connect to. */
function pinTarget(host: string, port: number, guard: ProxyGuard, callback: PinCallback): void {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  const check = (address: string, named: boolean): void => {
    // With the port: an allowed network limited to some ports is enforced here, as on a direct socket.
    const reason = blockedReason(address, guard.policy, port);
    if (reason === null) callback(null, address);
    else callback(ssrfBlockedError({ address, reason, stage: 'connect', ...(named ? { host: bare } : {}) }), '');
  };
  if (isIP(bare) !== 0) {
    check(bare, false);
    return;
  }
  guard.lookup(bare, { all: false }, (error, address) => {
    if (error) callback(error, '');
    else check(typeof address === 'string' ? address : (address[0]?.address ?? ''), true);
  });
}

/** CONNECT's authority: an IPv6 address in brackets. */
const authorityHost = (address: string): string => (isIP(address) === 6 ? `[${address}]` : address);

/** A CONNECT answer that says the proxy could not reach the target (its fault, not the proxy's). */
const TARGET_UNREACHABLE_STATUS = new Set([502, 503, 504]);

function tunnelError(proxy: ExitLabel, error: Error, target: string): TrawlError {
  const status = /^Bad response: (\d{3})$/.exec(error.message)?.[1];
  const { label } = proxy;
  if (status !== undefined && TARGET_UNREACHABLE_STATUS.has(Number(status))) {
    return fetchError(FetchErrorCode.Network, `proxy ${label} could not reach ${target} (CONNECT answered ${status})`, {
      action: 'retry',
      cause: error,
      details: { proxy: proxy.name, proxyStatus: Number(status), errno: `PROXY_${status}` },
    });
  }
  const why =
    status === '407'
      ? 'CONNECT answered 407: the proxy wants other credentials'
      : status !== undefined
        ? `CONNECT answered ${status}`
        : `${(error as NodeJS.ErrnoException).code ?? 'error'}: ${error.message}`;
  return proxyFault(proxy, why, error, status === undefined ? undefined : Number(status));
}

/** The proxy itself failed: the request never reached the target, and the proxy is taken out for a while. */
export function proxyFault(proxy: ExitLabel, why: string, cause: unknown, status?: number): TrawlError {
  return fetchError(FetchErrorCode.ProxyFailed, `proxy ${proxy.label} failed: ${why}`, {
    action: 'retry',
    cause,
    details: { proxy: proxy.name, proxyFault: true, ...(status === undefined ? {} : { proxyStatus: status }) },
  });
}

type ConnectionCallback = (error: Error | null, socket: Duplex | null) => void;

/** What hpagent's createConnection needs beyond node's: the target from the request's options. */
type TunnelOptions = ClientRequestArgs & { host: string; port: number | string };

/** hpagent's createConnection: opens the CONNECT tunnel to `options.host`. */
type TunnelCreate = (options: object, callback: ConnectionCallback) => void;

/**
 * A tunnel to a target the guard has resolved and checked: the proxy is asked for the checked
 * address, never the name (for HTTPS, TLS keeps the host's name: node's agent set `servername`
 * from it before this call); a failure is the proxy's, labelled with its exit.
 */
function tunnel(create: TunnelCreate, exit: ExitLabel, guard: ProxyGuard, options: TunnelOptions, callback: ConnectionCallback): void {
  const port = Number(options.port);
  pinTarget(options.host, port, guard, (error, address) => {
    if (error) return callback(error, null);
    create({ ...options, host: authorityHost(address), timeout: guard.connectMs }, (failure, socket) =>
      failure ? callback(tunnelError(exit, failure, `${options.host}:${port}`), null) : callback(null, socket),
    );
  });
}

class TunnelHttpAgent extends HttpProxyAgent {
  private readonly exit: ExitLabel;

  constructor(
    proxy: ProxyExitOptions,
    url: URL,
    options: AgentOptions,
    private readonly guard: ProxyGuard,
  ) {
    // The proxy's name is resolved through the guarded lookup (hpagent passes these options to its CONNECT request).
    super({ ...options, proxy: endpoint(url), proxyRequestOptions: { lookup: guard.lookup } as never });
    this.exit = labelOf(proxy);
  }

  override createConnection(options: TunnelOptions, callback: ConnectionCallback): undefined {
    // hpagent's own signature: (options, callback); node's typings know only the one-argument form.
    tunnel(super.createConnection.bind(this) as unknown as TunnelCreate, this.exit, this.guard, options, callback);
    return undefined;
  }
}

class TunnelHttpsAgent extends HttpsProxyAgent {
  private readonly exit: ExitLabel;

  constructor(
    proxy: ProxyExitOptions,
    url: URL,
    options: AgentOptions,
    private readonly guard: ProxyGuard,
  ) {
    super({ ...options, proxy: endpoint(url), proxyRequestOptions: { lookup: guard.lookup } as never });
    this.exit = labelOf(proxy);
  }

  override createConnection(options: TunnelOptions, callback: ConnectionCallback): undefined {
    // hpagent's own signature: (options, callback); node's typings know only the one-argument form.
    tunnel(super.createConnection.bind(this) as unknown as TunnelCreate, this.exit, this.guard, options, callback);
    return undefined;
  }
}

/** SOCKS5 replies that say the target could not be reached (RFC 1928 §6: 0x03, 0x04, 0x05, 0x06). */
const SOCKS_TARGET_FAULT = /rejected connection - (NetworkUnreachable|HostUnreachable|ConnectionRefused|TTLExpired)/;

class GuardedSocksAgent extends SocksProxyAgent {
  private readonly exit: ExitLabel;

  constructor(
    proxy: ProxyExitOptions,
    url: URL,
    options: AgentOptions,
    private readonly guard: ProxyGuard,
  ) {
    // The agent's `timeout` is the idle limit of pooled (free) sockets, as for node's agents;
    // socks-proxy-agent would also take it as its SOCKS handshake limit and as an idle limit on
    // every established socket (which would cut a slow response short). Its own limit is set to
    // connectMs instead, and lifted from each socket once the SOCKS handshake is done (connect()).
    const { timeout, ...rest } = options;
    // noDelay: node's own agents set it; without it Nagle's algorithm meets delayed ACKs and each
    // exchange through the proxy waits ~40 ms.
    super(url, { ...rest, socketOptions: { lookup: guard.lookup, noDelay: true } as never });
    if (timeout !== undefined) (this as unknown as { options: AgentOptions }).options.timeout = timeout;
    this.timeout = guard.connectMs;
    this.exit = labelOf(proxy);
    // The agent keeps the URL as text for its 'proxy' event: without credentials.
    Object.defineProperty(this, 'proxyUrl', { value: this.exit.label, enumerable: false });
  }

  override async connect(req: ClientRequest, opts: Parameters<SocksProxyAgent['connect']>[1]): Promise<Socket> {
    const host = opts.host ?? '';
    const port = Number(opts.port);
    const address = await new Promise<string>((resolve, reject) => pinTarget(host, port, this.guard, (error, pinned) => (error ? reject(error) : resolve(pinned))));
    const servername = (opts as { servername?: string }).servername ?? (isIP(host) === 0 ? host : undefined);
    const pinnedLookup = ((_name: string, _options: unknown, callback: (e: null, a: string, f: number) => void) => callback(null, address, isIP(address))) as unknown as LookupFunction;
    // socks-proxy-agent announces the raw socket to the proxy once the handshake is done.
    let raw: Socket | undefined;
    req.once('proxy', (event: { socket?: Socket }) => (raw = event.socket));
    try {
      const socket = await super.connect(req, { ...opts, host: address, lookup: pinnedLookup, ...(servername === undefined ? {} : { servername }) });
      // connectMs bounded the handshake; from here on got's timeouts govern the exchange.
      raw?.setTimeout(0);
      raw?.removeAllListeners('timeout');
      return socket;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (SOCKS_TARGET_FAULT.test(message)) {
        throw fetchError(FetchErrorCode.Network, `proxy ${this.exit.label} could not reach ${host}:${port} (${message})`, {
          action: 'retry',
          cause: error,
          details: { proxy: this.exit.name, errno: 'PROXY_TARGET_UNREACHABLE' },
        });
      }
      throw proxyFault(this.exit, message, error);
    }
  }
}
