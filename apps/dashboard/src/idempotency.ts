import { createHash } from 'node:crypto';
import type { Runtime } from '@trawl/runtime';

const TTL_MS = 24 * 3_600_000;

export type Reservation =
  /** First use of the key: run the request, then `complete` (or `release` on a server error). */
  | { kind: 'new'; complete(status: number, body: unknown): Promise<void>; release(): Promise<void> }
  /** The key was used with this body before: answer as then. */
  | { kind: 'replay'; status: number; body: unknown }
  /** The key was used with another body. */
  | { kind: 'mismatch' }
  /** The first request with the key is still running. */
  | { kind: 'in-progress' };

/** A canonical JSON text (keys sorted), so the same body written two ways has one fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Idempotency keys of write requests, in Redis for 24 h, keyed by token and key (two clients'
 * keys never collide; the key itself is hashed, so any text is a safe key). The first request
 * reserves the key atomically (SET NX), so two concurrent requests with one key never both run.
 */
export class IdempotencyStore {
  constructor(
    private readonly redis: Runtime['redis'],
    private readonly namespace: string,
  ) {}

  async reserve(route: string, tokenId: string, key: string, body: unknown): Promise<Reservation> {
    const redisKey = `${this.namespace}:idem:${tokenId}:${sha256(`${route}\n${key}`)}`;
    const fingerprint = sha256(canonical(body));
    const pending = JSON.stringify({ fingerprint, state: 'pending' });
    const set = await this.redis.set(redisKey, pending, 'PX', TTL_MS, 'NX');
    if (set === 'OK') {
      return {
        kind: 'new',
        complete: async (status, responseBody) => {
          await this.redis.set(redisKey, JSON.stringify({ fingerprint, state: 'done', status, body: responseBody }), 'KEEPTTL');
        },
        release: async () => {
          await this.redis.del(redisKey);
        },
      };
    }
    const stored = await this.redis.get(redisKey);
    if (stored === null) return this.reserve(route, tokenId, key, body); // expired in between
    const record = JSON.parse(stored) as { fingerprint: string; state: 'pending' | 'done'; status?: number; body?: unknown };
    if (record.fingerprint !== fingerprint) return { kind: 'mismatch' };
    if (record.state === 'pending') return { kind: 'in-progress' };
    return { kind: 'replay', status: record.status as number, body: record.body };
  }
}
