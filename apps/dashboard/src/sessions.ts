import type { Runtime } from '@trawl/runtime';

/**
 * The browser sessions that are still signed in, in Redis: one hash per API token
 * (`<namespace>:sessions:<token id>`, session id → expiry, epoch ms). A signed cookie is accepted
 * only while its session id is here, so signing out ends the session on the server (a copied
 * cookie stops working too), and signing out everywhere ends every session of the token at once.
 * Every dashboard replica of the namespace shares them.
 */
export class SessionStore {
  constructor(
    private readonly redis: Runtime['redis'],
    private readonly namespace: string,
  ) {}

  private key(tokenId: string): string {
    return `${this.namespace}:sessions:${tokenId}`;
  }

  /** Records a new session until `expiresAt`, and forgets the token's sessions that have expired. */
  async open(tokenId: string, sessionId: string, expiresAt: number, now: number): Promise<void> {
    const key = this.key(tokenId);
    const all = await this.redis.hgetall(key);
    const expired = Object.entries(all)
      .filter(([, until]) => Number(until) <= now)
      .map(([id]) => id);
    const latest = Math.max(expiresAt, ...Object.values(all).map(Number).filter(Number.isFinite));
    const pipeline = this.redis.multi().hset(key, sessionId, String(expiresAt));
    if (expired.length > 0) pipeline.hdel(key, ...expired);
    await pipeline.pexpireat(key, latest).exec();
  }

  async isOpen(tokenId: string, sessionId: string): Promise<boolean> {
    return (await this.redis.hexists(this.key(tokenId), sessionId)) === 1;
  }

  async close(tokenId: string, sessionId: string): Promise<void> {
    await this.redis.hdel(this.key(tokenId), sessionId);
  }

  /** Ends every session signed in with the token; returns how many there were. */
  async closeAll(tokenId: string): Promise<number> {
    const key = this.key(tokenId);
    const [[, count]] = (await this.redis.multi().hlen(key).del(key).exec()) as [[unknown, number], unknown];
    return count;
  }
}
