export { type MediaType, parseContentType } from './content-type.js';
export { DnsCache, parseHostsFile, type DnsCacheOptions, type DnsCacheStats, type DnsRecord, type DnsResolver } from './dns-cache.js';
export { FetchErrorCode, toFetchError } from './errors.js';
export { type FetchExtra, Fetcher, type FetchResult, type ResponseHeaders, type WireExchange } from './fetcher.js';
export {
  DEFAULT_ACCEPT,
  DEFAULT_FREE_SOCKET_TIMEOUT_MS,
  type FetcherOptions,
  type FetchOptions,
  type FetchTimeouts,
  type ProxyRequestEvent,
} from './options.js';
export {
  DEFAULT_ROBOTS_MAX_BYTES,
  DEFAULT_ROBOTS_MAX_REDIRECTS,
  type RobotsFetchOptions,
  type RobotsFetchResult,
} from './robots-fetch.js';
export { proxyLabel } from './proxy-agents.js';
export {
  DEFAULT_PROXY_BACKOFF_BASE_MS,
  DEFAULT_PROXY_BACKOFF_MAX_MS,
  DIRECT,
  type ProxyExitOptions,
  type ProxyOptions,
  ProxyRouter,
  type Route,
} from './proxy-route.js';
export { type AddressPolicy, blockedReason } from './ssrf.js';
export {
  SIGNATURE_DIRECTORY_PATH,
  SIGNATURE_DIRECTORY_TYPE,
  SIGNATURE_VALIDITY_S,
  type SignatureOptions,
  signatureDirectory,
  type SigningKey,
  signingKeyFromPem,
  webBotAuthHeaders,
} from './signature.js';
