import { getEncoding } from 'encoding-sniffer';
import iconv from 'iconv-lite';

export type CharsetSource = 'bom' | 'header' | 'meta' | 'utf-8-valid' | 'fallback';

export interface DecodedHtml {
  text: string;
  /** The encoding used (a WHATWG name, e.g. "windows-1252", "Shift_JIS", "UTF-8"). */
  charset: string;
  source: CharsetSource;
}

const EMPTY = Buffer.alloc(0);

/** The encoding the sniffer settles on, and whether anything declared it (else it used `fallback`). */
function sniff(bytes: Buffer, transport: string | undefined): { label: string; declared: boolean } {
  // The sniffer does not say whether it fell back to its default; asking with two different
  // defaults does: they agree only when the bytes or the header named an encoding.
  const a = getEncoding(bytes, { transportLayerEncodingLabel: transport, defaultEncoding: 'windows-1252' });
  // Only a windows-1252 answer can be the default; anything else was declared.
  if (a !== 'windows-1252') return { label: a, declared: true };
  const b = getEncoding(bytes, { transportLayerEncodingLabel: transport, defaultEncoding: 'UTF-8' });
  return { label: a, declared: a === b };
}

/**
 * Decodes an HTML body with the WHATWG sniffing order (encoding-sniffer): byte-order mark, then
 * the Content-Type charset, then a <meta charset> / http-equiv in the first 1024 bytes. With no
 * declaration at all, UTF-8 is tried strictly first (most of today's web), and windows-1252 (the
 * HTML standard's legacy default, a superset of ISO-8859-1) is used when the bytes are not valid
 * UTF-8. Invalid bytes become U+FFFD; this never throws.
 */
export function decodeHtml(body: Uint8Array, headerCharset: string | null): DecodedHtml {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  try {
    const transport = headerCharset ?? undefined;
    const { label, declared } = sniff(bytes, transport);
    if (!declared) {
      try {
        return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), charset: 'UTF-8', source: 'utf-8-valid' };
      } catch {
        return { text: iconv.decode(bytes, 'windows-1252'), charset: 'windows-1252', source: 'fallback' };
      }
    }
    const headerKnown = transport !== undefined && sniff(EMPTY, transport).declared;
    const source: CharsetSource = hasBom(bytes) ? 'bom' : headerKnown ? 'header' : 'meta';
    if (!iconv.encodingExists(label)) return { text: iconv.decode(bytes, 'utf-8'), charset: 'UTF-8', source: 'fallback' };
    return { text: iconv.decode(bytes, label), charset: label, source };
  } catch {
    return { text: new TextDecoder('utf-8', { fatal: false }).decode(bytes), charset: 'UTF-8', source: 'fallback' };
  }
}

function hasBom(bytes: Buffer): boolean {
  return (
    (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) ||
    (bytes[0] === 0xff && bytes[1] === 0xfe) ||
    (bytes[0] === 0xfe && bytes[1] === 0xff)
  );
}
