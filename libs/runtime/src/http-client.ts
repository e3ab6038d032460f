import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Config, ConfigError, userAgentOf } from '@trawl/config';
import { type Clock, ErrorCode, isTrawlError } from '@trawl/core';
import { DnsCache, Fetcher, parseHostsFile, type ProxyOptions, type ProxyRequestEvent, type SigningKey, signingKeyFromPem, webBotAuthHeaders } from '@trawl/fetch';

/*
 * The HTTP client as a runtime builds it from the configuration. A module of its own, loaded by
 * `Runtime.open` only for a runtime that may fetch: a process stage never loads got.
 */

export function createFetcher(config: Readonly<Config>, clock: Clock, key: SigningKey | null, onProxyRequest: (event: ProxyRequestEvent) => void): Fetcher {
  try {
    return buildFetcher(config, clock, key, onProxyRequest);
  } catch (error) {
    // A proxy the SSRF guard refuses is a configuration error: name the settings that fix it.
    if (!isTrawlError(error) || error.code !== ErrorCode.ConfigInvalid) throw error;
    const problems = error.message.replace(/^Fetcher: /, '').split('; ');
    throw new ConfigError(problems.map((problem) => (problem.startsWith('proxy ') ? `TRAWL_PROXY_URLS (fetch.proxyUrls): ${problem.replace('ssrf.allowNetworks', 'TRAWL_ALLOW_NETWORKS')}` : problem)));
  }
}

/** The proxy settings as the fetcher takes them; none when TRAWL_PROXY_URLS is unset. */
function proxyOptions(fetch: Readonly<Config['fetch']>): ProxyOptions | undefined {
  if (fetch.proxyUrls.length === 0) return undefined;
  return {
    proxies: fetch.proxyUrls,
    tiers: fetch.proxyTiers,
    rules: fetch.proxyRules,
    sessionRequests: fetch.proxySessionRequests,
    sessionMs: fetch.proxySessionMinutes * 60_000,
    backoffBaseMs: fetch.proxyBackoffBaseMs,
    backoffMaxMs: fetch.proxyBackoffMaxMs,
  };
}

function buildFetcher(config: Readonly<Config>, clock: Clock, key: SigningKey | null, onProxyRequest: (event: ProxyRequestEvent) => void): Fetcher {
  const agent = config.fetch.signatureAgentUrl ?? null;
  const proxies = proxyOptions(config.fetch);
  return new Fetcher({
    ...(proxies === undefined ? {} : { proxies, onProxyRequest }),
    userAgent: userAgentOf(config),
    // Web Bot Auth (opt-in): each request signed as it is sent, with a fresh nonce.
    signRequest: key === null ? undefined : (method, url, headers) => webBotAuthHeaders(method, url, headers, key, clock.now(), { agent, nonce: randomBytes(64).toString('base64') }),
    timeouts: {
      connectMs: config.fetch.connectTimeoutMs,
      firstByteMs: config.fetch.firstByteTimeoutMs,
      idleMs: config.fetch.idleTimeoutMs,
      totalMs: config.fetch.deadlineMs,
    },
    maxBodyBytes: config.fetch.maxBodyBytes,
    clock,
    ssrf: { allowNetworks: config.fetch.allowNetworks },
    dns: new DnsCache({
      maxTtlS: config.fetch.dnsMaxTtlS,
      errorTtlMs: config.fetch.dnsErrorTtlMs,
      clock,
      hosts: config.fetch.hostsFile ? readHostsFile(config.fetch.hostsFile) : undefined,
    }),
  });
}

export function readSigningKey(path: string): SigningKey {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([`TRAWL_SIGNATURE_KEY_FILE (fetch.signatureKeyFile): ${(error as Error).message}`]);
  }
  try {
    return signingKeyFromPem(pem);
  } catch (error) {
    throw new ConfigError([`TRAWL_SIGNATURE_KEY_FILE (fetch.signatureKeyFile): ${(error as Error).message}`]);
  }
}

function readHostsFile(path: string): Map<string, string[]> {
  try {
    return parseHostsFile(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError([`TRAWL_HOSTS_FILE (fetch.hostsFile): ${(error as Error).message}`]);
  }
}

