import { hash } from 'node:crypto';

/**
 * 16-byte fingerprint (`url_hash`): the first 128 bits of SHA-256 of the canonical URL (UTF-8).
 * 128 bits keep accidental collisions out of reach for any crawl size (birthday bound ~2^64)
 * at half the index size of the full digest.
 */
export function fingerprint(canonicalUrl: string): Buffer {
  // The one-shot crypto.hash (Node ≥ 20.12) costs about half of createHash().update().digest()
  // for a URL: every discovered link is fingerprinted. Strings are hashed as UTF-8 either way.
  return hash('sha256', canonicalUrl, 'buffer').subarray(0, 16);
}

/** The fingerprint as 32 lowercase hex characters. */
export function fingerprintHex(canonicalUrl: string): string {
  return hash('sha256', canonicalUrl, 'hex').slice(0, 32);
}
