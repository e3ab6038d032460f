import { createHash } from 'node:crypto';

/**
 * 16-byte fingerprint (`url_hash`): the first 128 bits of SHA-256 of the canonical URL (UTF-8).
 * 128 bits keep accidental collisions out of reach for any crawl size (birthday bound ~2^64)
 * at half the index size of the full digest.
 */
export function fingerprint(canonicalUrl: string): Buffer {
  return createHash('sha256').update(canonicalUrl, 'utf8').digest().subarray(0, 16);
}

/** The fingerprint as 32 lowercase hex characters. */
export function fingerprintHex(canonicalUrl: string): string {
  return createHash('sha256').update(canonicalUrl, 'utf8').digest('hex').slice(0, 32);
}
