import type { ResourceType } from './types.js';

/**
 * The lib's own rules for the requests a page makes, applied before the caller's `beforeRequest`,
 * the SSRF check and any fetch. Pure.
 */
export interface RequestPolicySettings {
  /** Never fetched: they change no link and cost most of a page's bytes. */
  blockResourceTypes: readonly ResourceType[];
  /** Requests to hosts other than the page's (CDNs, analytics, ads) are refused unless this is true… */
  allowOtherHosts: boolean;
  /** …or the host is listed here (`cdn.example.com`, `static.example.com:8443`). */
  allowHosts: readonly string[];
  /** A page's requests beyond this many are refused (a script that keeps polling). */
  maxRequestsPerPage: number;
  /** Resource types served from the subresource cache once fetched. */
  cacheResourceTypes: readonly ResourceType[];
}

export const DEFAULT_REQUEST_POLICY: Readonly<RequestPolicySettings> = Object.freeze({
  blockResourceTypes: Object.freeze(['image', 'media', 'font']),
  allowOtherHosts: false,
  allowHosts: Object.freeze([]),
  maxRequestsPerPage: 200,
  cacheResourceTypes: Object.freeze(['script', 'stylesheet']),
});

export interface RequestFacts {
  url: string;
  resourceType: ResourceType;
  method: string;
  /** `host` (with a non-default port) of the page being rendered. */
  pageHost: string;
  /** Requests the page has made before this one. */
  made: number;
}

/** Null when the request may go on, else why not (`resource-type:image`, `other-host`, …). */
export function refusedBy(policy: RequestPolicySettings, request: RequestFacts): string | null {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return 'invalid-url';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `scheme:${url.protocol.slice(0, -1)}`;
  // A crawler reads; a page's POST (a form, a tracking beacon, a like) could change something.
  if (request.method !== 'GET' && request.method !== 'HEAD') return `method:${request.method}`;
  if (policy.blockResourceTypes.includes(request.resourceType)) return `resource-type:${request.resourceType}`;
  if (request.resourceType === 'websocket' || request.resourceType === 'eventsource') return `resource-type:${request.resourceType}`;
  if (url.host !== request.pageHost && !policy.allowOtherHosts && !policy.allowHosts.includes(url.host)) return 'other-host';
  if (request.made >= policy.maxRequestsPerPage) return 'request-limit';
  return null;
}

/** Whether a fetched subresource may be kept for other pages: cacheable type, 200, not `no-store`/`private`. */
export function cacheable(policy: RequestPolicySettings, resourceType: ResourceType, status: number, headers: Readonly<Record<string, string>>): boolean {
  if (!policy.cacheResourceTypes.includes(resourceType) || status !== 200) return false;
  return !/\b(?:no-store|private)\b/i.test(headers['cache-control'] ?? '');
}
