/**
 * A gzip body that is a few MB on the wire and inflates to gigabytes: one compressed mebibyte
 * of spaces (~1 KB, full-flushed so it stands alone) repeated, framed as one valid gzip member.
 * Nothing but the ~1 KB segment is ever held in memory; the CRC of the whole member comes from
 * crc32 combination (zlib's crc32_combine), not from hashing gigabytes.
 */
import zlib from 'node:zlib';

const MiB = 1024 * 1024;
/** The first bytes it inflates to: a link a crawler that keeps a truncated body may follow. */
export const BOMB_PREFIX = '<!doctype html>\n<html><head><meta charset="utf-8"><title>gzip bomb</title></head>\n' +
  '<body><p><a href="/bomb/survived">survived</a></p>\n<pre>';

/** Multiplies a 32-bit vector by a GF(2) 32×32 matrix (zlib's gf2_matrix_times). */
function gf2Times(matrix: Uint32Array, vector: number): number {
  let sum = 0;
  let v = vector >>> 0;
  for (let i = 0; v !== 0; i++, v >>>= 1) if (v & 1) sum ^= matrix[i] as number;
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, matrix: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(matrix, matrix[n] as number);
}

/** CRC-32 of A‖B from crc(A), crc(B) and len(B) (zlib's crc32_combine); len may exceed 2^32. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = 0xedb88320; // the CRC-32 polynomial: the operator for one zero bit
  for (let n = 1, row = 1; n < 32; n++, row = (row << 1) >>> 0) odd[n] = row;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four zero bits
  let crc = crcA >>> 0;
  let length = lengthB;
  // Apply len(B) zero bytes to crc(A), one squaring per bit of the length.
  for (;;) {
    gf2Square(even, odd);
    if (length % 2 === 1) crc = gf2Times(even, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
    gf2Square(odd, even);
    if (length % 2 === 1) crc = gf2Times(odd, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
  }
  return (crc ^ crcB) >>> 0;
}

/** CRC-32 of `count` copies of a block whose CRC is `crc` and length `length`. */
function crc32Repeat(crc: number, length: number, count: number): number {
  let result = 0;
  let block = crc;
  let blockLength = length;
  for (let n = count; n > 0; n = Math.floor(n / 2)) {
    if (n % 2 === 1) result = crc32Combine(result, block, blockLength);
    block = crc32Combine(block, block, blockLength);
    blockLength *= 2;
  }
  return result;
}

export interface GzipBomb {
  /** Bytes on the wire (Content-Length). */
  compressedBytes: number;
  /** Bytes it inflates to. */
  inflatedBytes: number;
  /** The member in ~64 KiB chunks, produced on demand. */
  chunks(): Iterable<Buffer>;
}

const bombs = new Map<number, GzipBomb>();

/** A bomb inflating to at least `inflatedBytes` (rounded up to whole MiB after the prefix). */
export function gzipBomb(inflatedBytes: number): GzipBomb {
  const cached = bombs.get(inflatedBytes);
  if (cached !== undefined) return cached;
  const prefix = Buffer.from(BOMB_PREFIX, 'utf8');
  const count = Math.max(1, Math.ceil((inflatedBytes - prefix.byteLength) / MiB));
  const spaces = Buffer.alloc(MiB, 0x20);
  const flush = { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH };
  // RFC 1952 member header: magic, CM=deflate, no flags, no mtime, XFL=2 (max compression), OS=unknown.
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]);
  const head = Buffer.concat([header, zlib.deflateRawSync(prefix, flush)]);
  const segment = zlib.deflateRawSync(spaces, flush);
  const total = prefix.byteLength + count * MiB;
  const crc = crc32Combine(zlib.crc32(prefix), crc32Repeat(zlib.crc32(spaces), MiB, count), count * MiB);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc, 0);
  trailer.writeUInt32LE(total % 2 ** 32, 4); // ISIZE is the length modulo 2^32
  const tail = Buffer.concat([zlib.deflateRawSync(Buffer.alloc(0)), trailer]); // an empty final block
  const perChunk = 64;
  const batch = Buffer.concat(Array.from({ length: perChunk }, () => segment));
  const bomb: GzipBomb = {
    compressedBytes: head.byteLength + count * segment.byteLength + tail.byteLength,
    inflatedBytes: total,
    *chunks() {
      yield head;
      let left = count;
      for (; left >= perChunk; left -= perChunk) yield batch;
      if (left > 0) yield batch.subarray(0, left * segment.byteLength);
      yield tail;
    },
  };
  bombs.set(inflatedBytes, bomb);
  return bomb;
}
