/**
 * Binary files that pages link, as real sites do: reports, photos, archives, videos, installers,
 * fonts. Each starts with its format's magic bytes and goes on with seeded bytes, so a crawler
 * that sniffs content sees what the extension and Content-Type claim. Nothing is stored: the
 * bytes are generated chunk by chunk as the response streams.
 */
import { hashInts, mulberry32 } from './prng.js';

export const FILE_KINDS = ['pdf', 'jpg', 'png', 'zip', 'mp4', 'docx', 'exe', 'woff2'] as const;
export type FileKind = (typeof FILE_KINDS)[number];

interface FileType {
  extension: string;
  contentType: string;
  /** First bytes of a file of this format. */
  magic: Buffer;
  minBytes: number;
  maxBytes: number;
  /** Anchor text prefix. */
  label: string;
}

const KB = 1024;

export const FILE_TYPES: Readonly<Record<FileKind, FileType>> = {
  pdf: { extension: 'pdf', contentType: 'application/pdf', magic: Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'), minBytes: 20 * KB, maxBytes: 300 * KB, label: 'Report (PDF)' },
  jpg: { extension: 'jpg', contentType: 'image/jpeg', magic: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]), minBytes: 10 * KB, maxBytes: 200 * KB, label: 'Photo' },
  png: { extension: 'png', contentType: 'image/png', magic: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), minBytes: 4 * KB, maxBytes: 100 * KB, label: 'Chart' },
  zip: { extension: 'zip', contentType: 'application/zip', magic: Buffer.from([0x50, 0x4b, 0x03, 0x04]), minBytes: 50 * KB, maxBytes: 500 * KB, label: 'Archive (ZIP)' },
  mp4: { extension: 'mp4', contentType: 'video/mp4', magic: Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d]), minBytes: 200 * KB, maxBytes: 800 * KB, label: 'Video' },
  docx: {
    extension: 'docx',
    contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    magic: Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00]),
    minBytes: 10 * KB,
    maxBytes: 100 * KB,
    label: 'Document (Word)',
  },
  exe: { extension: 'exe', contentType: 'application/vnd.microsoft.portable-executable', magic: Buffer.from([0x4d, 0x5a, 0x90, 0x00]), minBytes: 100 * KB, maxBytes: 500 * KB, label: 'Installer' },
  woff2: { extension: 'woff2', contentType: 'font/woff2', magic: Buffer.from('wOF2', 'latin1'), minBytes: 10 * KB, maxBytes: 60 * KB, label: 'Font' },
};

const DIRECTORIES: Readonly<Record<FileKind, string>> = {
  pdf: 'docs',
  docx: 'docs',
  jpg: 'images',
  png: 'images',
  zip: 'downloads',
  exe: 'downloads',
  mp4: 'media',
  woff2: 'fonts',
};

export const fileDirectory = (kind: FileKind): string => DIRECTORIES[kind];

/** A file's identity: the content host, the page linking it and its position there. */
export interface FileRef {
  seed: number;
  host: number;
  page: number;
  index: number;
  kind: FileKind;
}

const STREAM_SIZE = 0xf11e;
const STREAM_BYTES = 0xb17e;

/** Size in bytes, drawn in the kind's range. */
export function fileSize(ref: FileRef): number {
  const type = FILE_TYPES[ref.kind];
  return type.minBytes + (hashInts(ref.seed, ref.host, ref.page, ref.index, STREAM_SIZE) % (type.maxBytes - type.minBytes + 1));
}

/** The file's bytes in chunks of at most `chunkBytes`: magic bytes, then a seeded stream. */
export function* fileChunks(ref: FileRef, chunkBytes = 64 * KB): Generator<Buffer> {
  const size = fileSize(ref);
  const random = mulberry32(hashInts(ref.seed, ref.host, ref.page, ref.index, STREAM_BYTES));
  const magic = FILE_TYPES[ref.kind].magic;
  for (let offset = 0; offset < size; offset += chunkBytes) {
    const chunk = Buffer.allocUnsafe(Math.min(chunkBytes, size - offset));
    for (let i = 0; i < chunk.length; i += 4) {
      const word = (random() * 4294967296) >>> 0;
      chunk[i] = word & 255;
      if (i + 1 < chunk.length) chunk[i + 1] = (word >>> 8) & 255;
      if (i + 2 < chunk.length) chunk[i + 2] = (word >>> 16) & 255;
      if (i + 3 < chunk.length) chunk[i + 3] = word >>> 24;
    }
    if (offset < magic.length) magic.copy(chunk, 0, offset, Math.min(magic.length, offset + chunk.length));
    yield chunk;
  }
}

/** Anchor text of a file link: `Report (PDF) 3-0`. */
export const fileLabel = (kind: FileKind, page: number, index: number): string => `${FILE_TYPES[kind].label} ${page}-${index}`;
