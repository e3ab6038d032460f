import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import { loadConfig } from '@trawl/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contentHash, contentKey } from './content-store.js';
import { createContentStore } from './create.js';
import { LocalContentStore } from './local-store.js';
import { storeContract } from './testing/index.js';

const makeTempDir = (): Promise<string> => mkdtemp(join(tmpdir(), 'trawl-store-test-'));

storeContract('LocalContentStore', async () => {
  const dir = await makeTempDir();
  return { store: new LocalContentStore({ dir }), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

storeContract('LocalContentStore without fsync, gzip level 1', async () => {
  const dir = await makeTempDir();
  return {
    store: new LocalContentStore({ dir, compression: 'gzip', gzipLevel: 1, fsync: false }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

storeContract('LocalContentStore writing on the calling thread', async () => {
  const dir = await makeTempDir();
  return { store: new LocalContentStore({ dir, thread: false }), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

/** How many of this process's threads run at `nice` (Linux: /proc/self/task/<tid>/stat, field 19). */
function threadsAtNice(nice: number): number {
  return readdirSync('/proc/self/task').filter((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) === nice;
  }).length;
}

describe.runIf(process.platform === 'linux')('LocalContentStore: the writer thread\'s priority', () => {
  it('compresses and writes on a thread at the nice value given, the calling thread left as it was', async () => {
    const dir = await makeTempDir();
    const before = getPriority();
    const nice = Math.max(before + 1, 11);
    const store = new LocalContentStore({ dir, threadNice: nice });
    try {
      const atNiceBefore = threadsAtNice(nice);
      await store.put(Buffer.from('<p>in the background</p>'));
      expect(threadsAtNice(nice)).toBe(atNiceBefore + 1);
      expect(getPriority()).toBe(before);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** How many of this process's threads have the OS name `name` (Linux: /proc/self/task/<tid>/comm). */
const threadsNamed = (name: string): number => readdirSync('/proc/self/task').filter((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === name).length;

describe.runIf(process.platform === 'linux')('LocalContentStore: the writer thread\'s name', () => {
  it('is trawl-store, for top -H and the cost benchmark', async () => {
    const dir = await makeTempDir();
    const store = new LocalContentStore({ dir });
    try {
      const before = threadsNamed('trawl-store');
      await store.put(Buffer.from('<p>named</p>'));
      expect(threadsNamed('trawl-store')).toBe(before + 1);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('createContentStore: TRAWL_CONTENT_COMPRESSION and its levels', () => {
  const body = Buffer.from('<p>a page of prose, a page of prose, a page of prose</p>'.repeat(200));

  /** The one file a store built from `env` writes for `body`, checked to hold `body`. */
  const storedFile = async (env: Record<string, string>): Promise<{ name: string; bytes: Buffer }> => {
    const dir = await makeTempDir();
    const store = createContentStore(loadConfig({ env: { TRAWL_CONTENT_DIR: dir, ...env } }));
    try {
      await store.put(body);
      const [file] = await listFiles(dir);
      const bytes = await readFile(join(dir, file as string));
      expect((file as string).endsWith('.gz') ? gunzipSync(bytes) : brotliDecompressSync(bytes)).toEqual(body);
      return { name: file as string, bytes };
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  };

  it('stores brotli at quality 1 by default, at the quality given', async () => {
    const standard = await storedFile({});
    expect(standard.name.endsWith(`${contentHash(body)}.br`)).toBe(true);
    expect(standard.bytes).toEqual(brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
    const best = await storedFile({ TRAWL_CONTENT_BROTLI_QUALITY: '11' });
    expect(best.bytes.length).toBeLessThan(standard.bytes.length);
  });

  it('stores gzip at level 1 under gzip, and at the level given', async () => {
    // gzip's header says which end of the scale wrote it (RFC 1952, XFL): 4 = fastest (zlib
    // levels 0–1), 2 = best (level 9), 0 otherwise.
    const extraFlags = async (env: Record<string, string>): Promise<number> => {
      const { name, bytes } = await storedFile({ TRAWL_CONTENT_COMPRESSION: 'gzip', ...env });
      expect(name.endsWith(`${contentHash(body)}.gz`)).toBe(true);
      return bytes[8] as number;
    };
    expect(await extraFlags({})).toBe(4);
    expect(await extraFlags({ TRAWL_CONTENT_GZIP_LEVEL: '9' })).toBe(2);
    expect(await extraFlags({ TRAWL_CONTENT_GZIP_LEVEL: '6' })).toBe(0);
  });

  it('refuses a format or a level it does not have, naming the setting', () => {
    expect(() => loadConfig({ env: { TRAWL_CONTENT_GZIP_LEVEL: '10' } })).toThrow(/TRAWL_CONTENT_GZIP_LEVEL/);
    expect(() => loadConfig({ env: { TRAWL_CONTENT_BROTLI_QUALITY: '12' } })).toThrow(/TRAWL_CONTENT_BROTLI_QUALITY/);
    expect(() => loadConfig({ env: { TRAWL_CONTENT_COMPRESSION: 'zstd' } })).toThrow(/TRAWL_CONTENT_COMPRESSION/);
  });
});

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

describe('LocalContentStore on disk', () => {
  let dir: string;
  let store: LocalContentStore;

  beforeEach(async () => {
    dir = await makeTempDir();
    store = new LocalContentStore({ dir });
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lays bodies out as <hh>/<sha256>.br, valid brotli, no temp files left', async () => {
    const body = Buffer.from('<p>layout</p>');
    const hash = contentHash(body);
    await store.put(body);
    await store.put(Buffer.from('another'));
    const files = await listFiles(dir);
    expect(files).toHaveLength(2);
    const expected = join(hash.slice(0, 2), `${hash}.br`);
    expect(files).toContain(expected);
    expect(brotliDecompressSync(await readFile(join(dir, expected)))).toEqual(body);
  });

  for (const [writer, reader] of [
    ['gzip', 'brotli'],
    ['brotli', 'gzip'],
  ] as const) {
    it(`a ${reader} store reads the bodies a ${writer} store wrote in the same place`, async () => {
      const earlier = new LocalContentStore({ dir, compression: writer });
      const body = Buffer.from(`<p>stored as ${writer}</p>`);
      const { key, contentHash: hash } = await earlier.put(body);
      await earlier.close();
      expect(await listFiles(dir)).toEqual([join(hash.slice(0, 2), `${hash}${writer === 'gzip' ? '.gz' : '.br'}`)]);

      const later = new LocalContentStore({ dir, compression: reader });
      try {
        expect(await later.has(key)).toBe(true);
        expect(await later.get(key)).toEqual(body);
        expect(await later.has(contentKey(contentHash(Buffer.from('never stored'))))).toBe(false);
        expect(await later.get(contentKey(contentHash(Buffer.from('never stored'))))).toBeNull();
      } finally {
        await later.close();
      }
    });
  }

  it('concurrent puts in one process write once', async () => {
    const body = randomBytes(512 * 1024);
    const results = await Promise.all(Array.from({ length: 10 }, () => store.put(body)));
    expect(results.filter((r) => !r.existed)).toHaveLength(1);
    expect(await listFiles(dir)).toHaveLength(1);
  });

  it('a temp file left by a crash is invisible and does not block the next put', async () => {
    const body = Buffer.from('written after a crash');
    const hash = contentHash(body);
    const key = contentKey(hash);
    const shard = join(dir, hash.slice(0, 2));
    await mkdir(shard, { recursive: true });
    await writeFile(join(shard, `.${hash}.crashed.tmp`), Buffer.from([0x1f, 0x8b, 0x08])); // half a gzip header

    expect(await store.has(key)).toBe(false);
    expect(await store.get(key)).toBeNull();
    const result = await store.put(body);
    expect(result.existed).toBe(false);
    expect(await store.get(key)).toEqual(body);
  });

  it('a corrupt stored body is an ERR_STORE failure, not a page', async () => {
    const body = Buffer.from('will be corrupted');
    const { key, contentHash: hash } = await store.put(body);
    const path = join(dir, hash.slice(0, 2), `${hash}.br`);

    await writeFile(path, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00, 0x01]));
    await expect(store.get(key)).rejects.toMatchObject({ code: 'ERR_STORE', action: 'fail', message: expect.stringContaining('corrupt') });

    // Valid brotli of the wrong bytes: caught by the hash check.
    await writeFile(path, brotliCompressSync(Buffer.from('something else')));
    await expect(store.get(key)).rejects.toMatchObject({ code: 'ERR_STORE', action: 'fail', message: expect.stringContaining('does not match') });

    // The same for a body found under its gzip name.
    await rm(path);
    await writeFile(join(dir, hash.slice(0, 2), `${hash}.gz`), gzipSync(Buffer.from('something else')));
    await expect(store.get(key)).rejects.toMatchObject({ code: 'ERR_STORE', action: 'fail', message: expect.stringContaining('does not match') });
  });

  for (const thread of [true, false]) {
    it(`a dir that cannot be a directory is a fatal ERR_STORE (${thread ? 'writer thread' : 'calling thread'})`, async () => {
      const file = join(dir, 'a-file');
      await writeFile(file, 'x');
      const broken = new LocalContentStore({ dir: file, thread });
      await expect(broken.put(Buffer.from('body'))).rejects.toMatchObject({ code: 'ERR_STORE', action: 'fatal', message: expect.stringContaining('ENOTDIR') });
      // A failed write loses nothing else: the same store writes a good body elsewhere afterwards.
      await broken.close();
    });
  }

  it('the writer thread keeps no process alive once its writes are done', async () => {
    const script = [
      "import { LocalContentStore } from '@trawl/store';",
      `const store = new LocalContentStore({ dir: ${JSON.stringify(dir)} });`,
      "const put = await store.put(Buffer.from('written from a child process'));",
      'console.log(JSON.stringify(put));',
      '// no close(): the process must still exit on its own',
    ].join('\n');
    const child = spawnSync(process.execPath, ['--conditions=trawl-source', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(child.error).toBeUndefined();
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toMatchObject({ existed: false });
    expect(await listFiles(dir)).toHaveLength(1);
  }, 30_000);

  it('the gzip level is applied', async () => {
    const body = Buffer.from('compress me please '.repeat(5_000));
    const storedAt = async (gzipLevel: number): Promise<number> => {
      const levelDir = await mkdtemp(join(dir, `level-${gzipLevel}-`));
      const levelStore = new LocalContentStore({ dir: levelDir, compression: 'gzip', gzipLevel });
      const { storedBytes } = await levelStore.put(body);
      await levelStore.close();
      return storedBytes;
    };
    expect(await storedAt(0)).toBeGreaterThan(body.length); // stored, plus gzip framing
    expect(await storedAt(9)).toBeLessThan(body.length / 50);
  });

  it('rejects bad options with ERR_CONFIG_INVALID', () => {
    expect(() => new LocalContentStore({ dir: '' })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => new LocalContentStore({ dir, gzipLevel: 10 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => new LocalContentStore({ dir, gzipLevel: 1.5 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => new LocalContentStore({ dir, brotliQuality: 12 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringContaining('brotliQuality') }));
    expect(() => new LocalContentStore({ dir, compression: 'zstd' as 'gzip' })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringContaining('compression') }));
  });
});
