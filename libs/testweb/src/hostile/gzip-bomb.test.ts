import { createGunzip } from 'node:zlib';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BOMB_PREFIX, crc32Combine, gzipBomb } from './gzip-bomb.js';

describe('crc32Combine', () => {
  it.each([
    ['a', 'b'],
    ['hello, ', 'world'],
    ['', 'abc'],
    ['abc', ''],
    ['x'.repeat(1000), 'y'.repeat(70_000)],
  ])('combines crc(%j) and crc(%j) into the CRC of the concatenation', (a, b) => {
    expect(crc32Combine(zlib.crc32(a), zlib.crc32(b), Buffer.byteLength(b))).toBe(zlib.crc32(a + b));
  });
});

describe('gzipBomb', () => {
  it('is one valid gzip member that inflates to exactly what it claims', async () => {
    const bomb = gzipBomb(40 * 1024 * 1024);
    const chunks = [...bomb.chunks()];
    const wire = Buffer.concat(chunks);
    expect(wire.byteLength).toBe(bomb.compressedBytes);
    expect(bomb.inflatedBytes).toBeGreaterThanOrEqual(40 * 1024 * 1024);
    expect(bomb.compressedBytes).toBeLessThan(bomb.inflatedBytes / 500);
    expect(wire.readUInt32LE(wire.byteLength - 4)).toBe(bomb.inflatedBytes % 2 ** 32);
    // Stream it through zlib, which checks the CRC and length in the trailer.
    const gunzip = createGunzip();
    let inflated = 0;
    let head = '';
    gunzip.on('data', (chunk: Buffer) => {
      if (head.length < BOMB_PREFIX.length + 10) head += chunk.subarray(0, 200).toString('utf8');
      inflated += chunk.byteLength;
    });
    const done = new Promise<void>((resolve, reject) => {
      gunzip.on('end', resolve);
      gunzip.on('error', reject);
    });
    gunzip.end(wire);
    await done;
    expect(inflated).toBe(bomb.inflatedBytes);
    expect(head.startsWith(`${BOMB_PREFIX}     `)).toBe(true);
  });

  it('describes gigabytes without computing them', () => {
    const started = performance.now();
    const bomb = gzipBomb(16 * 1024 ** 3);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(bomb.inflatedBytes).toBeGreaterThanOrEqual(16 * 1024 ** 3);
    expect(bomb.compressedBytes).toBeGreaterThan(12 * 1024 * 1024);
    expect(bomb.compressedBytes).toBeLessThan(24 * 1024 * 1024);
    expect(gzipBomb(16 * 1024 ** 3)).toBe(bomb);
  });
});
