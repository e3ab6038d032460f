/**
 * From the bytes of a robots.txt response to the text the parser reads, and the one encoding in
 * which rule paths and URL paths are compared.
 */

/** RFC 9309 §2.5: crawlers must parse at least the first 500 KiB; we parse exactly that. */
export const ROBOTS_MAX_BYTES = 500 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });

/**
 * The first {@link ROBOTS_MAX_BYTES} of a body as text: UTF-8 (RFC 9309 §2.3), invalid bytes
 * replaced by U+FFFD, a leading byte-order mark dropped. When the body is cut, the incomplete
 * last line is dropped too: half a rule can mean something else entirely (`Allow: /private/pub`
 * cut to `Allow: /pri` would open the whole of `/private`).
 */
export function robotsText(body: string | Buffer): string {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  if (bytes.length <= ROBOTS_MAX_BYTES) return utf8.decode(bytes);
  let end = ROBOTS_MAX_BYTES;
  // A line ends at LF or CR (RFC 9309 §2.2: EOL = %x0A / %x0D / %x0D.0A).
  while (end > 0 && bytes[end - 1] !== 0x0a && bytes[end - 1] !== 0x0d) end -= 1;
  return utf8.decode(bytes.subarray(0, end));
}

const HEX = '0123456789ABCDEF';

/** ASCII lookup tables: 1 = member. */
function asciiSet(chars: string): Uint8Array {
  const set = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) set[chars.charCodeAt(i)] = 1;
  return set;
}

const ALPHA_DIGIT = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** RFC 3986 §2.3: an escape of one of these is the same octet as the character itself. */
const UNRESERVED = asciiSet(`${ALPHA_DIGIT}-._~`);
/**
 * Kept as they are: RFC 3986 `pchar`, `/` and `?` (path and query). A reserved character and its
 * escape are different octets (RFC 3986 §2.2), so neither form is turned into the other. `*` and
 * `$` are here, so a pattern's wildcard and end anchor survive. Everything else in ASCII (space,
 * `"<>[\]^`{|}`, controls, a `%` that starts no escape) is percent-encoded.
 */
const RAW = asciiSet(`${ALPHA_DIGIT}-._~!$&'()*+,;=:@/?`);

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57;
  return -1;
}

const escape = (byte: number): string => `%${HEX[byte >> 4]}${HEX[byte & 15]}`;

/**
 * The form in which a rule's path pattern and a URL's path+query are compared (RFC 9309 §2.2.2:
 * octets outside ASCII and characters not allowed raw are percent-encoded; an escaped unreserved
 * octet is unencoded; `%7e` and `%7E` are the same octet). Applied to both sides, so `/a%3cd`,
 * `/a%3Cd` and `/a<d` are one path, and so are `/%7Ejoe` and `/~joe`, and `/café` and
 * `/caf%C3%A9`. Idempotent. The result is ASCII, so its length is its length in octets.
 */
export function matchForm(text: string): string {
  // Fast path: already canonical (the usual case for URL paths from the normalizer).
  let clean = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || RAW[c] !== 1) {
      clean = false;
      break;
    }
  }
  if (clean) return text;

  const bytes = Buffer.from(text, 'utf8');
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if (byte === 0x25 /* % */) {
      const hi = hexValue(bytes[i + 1]);
      const lo = hexValue(bytes[i + 2]);
      if (hi >= 0 && lo >= 0) {
        const value = (hi << 4) | lo;
        out += value < 128 && UNRESERVED[value] === 1 ? String.fromCharCode(value) : escape(value);
        i += 2;
        continue;
      }
      out += '%25';
    } else if (byte < 128 && RAW[byte] === 1) {
      out += String.fromCharCode(byte);
    } else {
      out += escape(byte);
    }
  }
  return out;
}
