export interface MediaType {
  /** `type/subtype`, lowercased, without parameters; null when absent or malformed. */
  contentType: string | null;
  /** The `charset` parameter, unquoted and lowercased; null when absent. */
  charset: string | null;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** RFC 9110 §8.3.1 `Content-Type: type/subtype; param=value`. Lenient where servers are sloppy. */
export function parseContentType(header: string | string[] | undefined): MediaType {
  // A repeated header is a server bug; browsers use the last one.
  const value = Array.isArray(header) ? header.at(-1) : header;
  if (value === undefined) return { contentType: null, charset: null };
  const [essence = '', ...params] = value.split(';');
  const type = essence.trim().toLowerCase();
  let charset: string | null = null;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const raw = param.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').trim().toLowerCase();
    if (raw !== '') charset = raw;
    break;
  }
  return { contentType: TOKEN.test(type) ? type : null, charset };
}
