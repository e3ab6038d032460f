import { randomBytes } from 'node:crypto';
import { isTrawlError } from '@trawl/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ContentStore, contentHash, contentKey } from '../content-store.js';

export { S3RVER_CREDENTIALS, startTestS3, type TestS3 } from './s3rver.js';

export interface StoreUnderTest {
  store: ContentStore;
  /** Removes whatever the store wrote (temp dir, bucket prefix). Called after `close`. */
  cleanup: () => Promise<void>;
}

/**
 * The ContentStore contract: every backend (local directory, S3) runs this suite. Each test
 * gets a fresh, empty store from `makeStore`.
 */
export function storeContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name} satisfies the ContentStore contract`, () => {
    let store: ContentStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    afterEach(async () => {
      await store.close();
      await cleanup();
    });

    it('round-trips a body under its content key', async () => {
      const body = Buffer.from('<html><body>hello, crawler</body></html>');
      const result = await store.put(body);
      expect(result.contentHash).toBe(contentHash(body));
      expect(result.contentHash).toMatch(/^[0-9a-f]{64}$/);
      expect(result.key).toBe(contentKey(result.contentHash));
      expect(result.existed).toBe(false);
      expect(result.storedBytes).toBeGreaterThan(0);
      expect(await store.has(result.key)).toBe(true);
      expect(await store.get(result.key)).toEqual(body);
    });

    it('accepts a plain Uint8Array and keeps every byte value', async () => {
      const body = Uint8Array.from({ length: 512 }, (_, i) => i % 256);
      const { key } = await store.put(body);
      expect(await store.get(key)).toEqual(Buffer.from(body));
    });

    it('is idempotent: the second put of a body stores nothing', async () => {
      const body = Buffer.from('same page, fetched twice');
      const first = await store.put(body);
      const second = await store.put(Buffer.from(body));
      expect(second).toEqual({ key: first.key, contentHash: first.contentHash, storedBytes: 0, existed: true });
      expect(await store.get(first.key)).toEqual(body);
    });

    it('gives different bodies different keys', async () => {
      const a = await store.put(Buffer.from('page a'));
      const b = await store.put(Buffer.from('page b'));
      expect(a.key).not.toBe(b.key);
      expect(await store.get(a.key)).toEqual(Buffer.from('page a'));
      expect(await store.get(b.key)).toEqual(Buffer.from('page b'));
    });

    it('stores an empty body', async () => {
      const result = await store.put(new Uint8Array(0));
      expect(result.contentHash).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      const body = await store.get(result.key);
      expect(body).not.toBeNull();
      expect(body?.length).toBe(0);
    });

    it('round-trips a 2 MB incompressible body', async () => {
      const body = randomBytes(2 * 1024 * 1024);
      const { key } = await store.put(body);
      const back = await store.get(key);
      expect(back?.length).toBe(body.length);
      expect(back?.equals(body)).toBe(true);
    });

    it('round-trips an 8 MB incompressible body (larger than one S3 upload part)', async () => {
      const body = randomBytes(8 * 1024 * 1024);
      const result = await store.put(body);
      expect(result.existed).toBe(false);
      expect(result.storedBytes).toBeGreaterThan(body.length);
      expect((await store.get(result.key))?.equals(body)).toBe(true);
      expect((await store.put(body)).existed).toBe(true);
    });

    it('check() passes on a usable store, twice', async () => {
      await expect(store.check()).resolves.toBeUndefined();
      await expect(store.check()).resolves.toBeUndefined();
    });

    it('stores many different bodies put at once', async () => {
      const bodies = Array.from({ length: 24 }, (_, i) => Buffer.from(`<p>page ${i}</p>`.repeat(i + 1)));
      const results = await Promise.all(bodies.map((body) => store.put(body)));
      expect(new Set(results.map((r) => r.key)).size).toBe(bodies.length);
      expect(results.every((r) => !r.existed)).toBe(true);
      for (const [i, r] of results.entries()) expect(await store.get(r.key)).toEqual(bodies[i]);
    });

    it('compresses: a repetitive body is stored much smaller', async () => {
      const body = Buffer.from('<tr><td>row</td><td>value</td></tr>\n'.repeat(20_000));
      const result = await store.put(body);
      expect(result.storedBytes).toBeLessThan(body.length / 10);
      // Buffer#equals, not toEqual: a deep equal of 700 KB takes seconds.
      expect((await store.get(result.key))?.equals(body)).toBe(true);
    });

    it('survives concurrent puts of one body', async () => {
      const body = randomBytes(256 * 1024);
      const results = await Promise.all(Array.from({ length: 8 }, () => store.put(body)));
      const key = results[0]?.key;
      expect(results.every((r) => r.key === key)).toBe(true);
      expect(results.filter((r) => !r.existed).length).toBeGreaterThanOrEqual(1);
      for (const r of results.filter((r) => r.existed)) expect(r.storedBytes).toBe(0);
      expect((await store.get(key ?? ''))?.equals(body)).toBe(true);
      expect((await store.put(body)).existed).toBe(true);
    });

    it('answers null / false for a key it never stored', async () => {
      const missing = contentKey(contentHash(Buffer.from('never stored')));
      expect(await store.get(missing)).toBeNull();
      expect(await store.has(missing)).toBe(false);
    });

    it('rejects what is not a content key with ERR_STORE', async () => {
      for (const key of ['../../etc/passwd', 'sha256:../../x', `sha256:${'A'.repeat(64)}`, '', 'md5:abc']) {
        const error: unknown = await store.get(key).catch((e: unknown) => e);
        expect(isTrawlError(error) && error.code).toBe('ERR_STORE');
        await expect(store.has(key)).rejects.toMatchObject({ code: 'ERR_STORE' });
      }
    });

    it('close waits for puts in flight, is idempotent, and refuses new puts', async () => {
      const pending = store.put(randomBytes(64 * 1024));
      await store.close();
      await expect(pending).resolves.toMatchObject({ existed: false });
      await store.close();
      await expect(store.put(Buffer.from('late'))).rejects.toMatchObject({ code: 'ERR_STORE' });
    });
  });
}
