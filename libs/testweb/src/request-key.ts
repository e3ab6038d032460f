/**
 * The synthetic web's own idea of "which page was asked for". It is written here, independently
 * of trawl's URL library, so the web can judge the crawler's normalizer instead of agreeing with
 * it by construction. It covers exactly the equivalences the link generator emits.
 */

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** Query parameters that carry no page identity (RFC-less, but every crawler strips them). */
const TRACKING_PARAM = /^(utm_[a-z0-9_]*|fbclid|gclid)$/;

/** RFC 3986 §2.3: escapes of unreserved characters are equivalent to the characters themselves. */
function decodeUnreserved(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

/** RFC 3986 §5.2.4 remove_dot_segments. */
export function removeDotSegments(path: string): string {
  let input = path;
  const output: string[] = [];
  while (input.length > 0) {
    if (input.startsWith('../')) input = input.slice(3);
    else if (input.startsWith('./')) input = input.slice(2);
    else if (input.startsWith('/./')) input = input.slice(2);
    else if (input === '/.') input = '/';
    else if (input.startsWith('/../')) {
      input = input.slice(3);
      output.pop();
    } else if (input === '/..') {
      input = '/';
      output.pop();
    } else if (input === '.' || input === '..') input = '';
    else {
      const next = input.indexOf('/', input.startsWith('/') ? 1 : 0);
      const segment = next === -1 ? input : input.slice(0, next);
      output.push(segment);
      input = next === -1 ? '' : input.slice(next);
    }
  }
  return output.join('');
}

function paramName(param: string): string {
  const eq = param.indexOf('=');
  return eq === -1 ? param : param.slice(0, eq);
}

/**
 * The canonical key of a request target (`req.url`): fragment dropped, unreserved escapes
 * decoded (other escapes upper-cased), dot segments resolved, tracking parameters removed and
 * the remaining parameters sorted by name, then value. Returns null for targets that are not
 * origin-form or absolute-form (`*`, garbage).
 */
export function requestKey(target: string): string | null {
  let raw = target;
  if (!raw.startsWith('/')) {
    // Absolute-form (RFC 9112 §3.2.2), as a proxy-style client may send it.
    const match = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*(.*)$/.exec(raw);
    if (!match) return null;
    raw = match[1] === undefined || match[1] === '' ? '/' : match[1];
    if (!raw.startsWith('/')) raw = `/${raw}`;
  }
  const hash = raw.indexOf('#');
  if (hash !== -1) raw = raw.slice(0, hash);
  const q = raw.indexOf('?');
  const path = removeDotSegments(decodeUnreserved(q === -1 ? raw : raw.slice(0, q)));
  if (q === -1) return path;
  const params = raw
    .slice(q + 1)
    .split('&')
    .filter((param) => param !== '')
    .map(decodeUnreserved)
    .filter((param) => !TRACKING_PARAM.test(paramName(param)))
    .map((param) => ({ param, name: paramName(param) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.param < b.param ? -1 : a.param > b.param ? 1 : 0))
    .map(({ param }) => param);
  return params.length === 0 ? path : `${path}?${params.join('&')}`;
}
