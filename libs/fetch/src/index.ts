export { type MediaType, parseContentType } from './content-type.js';
export { toFetchError } from './errors.js';
export { type FetchExtra, Fetcher, type FetchResult, type ResponseHeaders } from './fetcher.js';
export {
  DEFAULT_ACCEPT,
  DEFAULT_FREE_SOCKET_TIMEOUT_MS,
  type FetcherOptions,
  type FetchOptions,
  type FetchTimeouts,
} from './options.js';
