import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { afterAll, describe, expect, it } from 'vitest';
import { createNamedObjects } from './create.js';
import { LocalNamedObjects, type NamedObjects, S3NamedObjects } from './named-objects.js';
import { startTestS3 } from './testing/index.js';

const BUCKET = 'trawl-named';
const s3 = await startTestS3([BUCKET]);
const dirs: string[] = [];
afterAll(async () => {
  await s3.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'trawl-named-'));
  dirs.push(dir);
  return dir;
};

/** What every NamedObjects backend does: the seen-set's snapshots rely on each of these. */
function namedObjectsContract(name: string, make: () => Promise<NamedObjects>): void {
  describe(`${name} keeps named objects`, () => {
    it('puts, gets, lists by prefix and deletes, keeping every byte', async () => {
      const objects = await make();
      const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
      await objects.put('ns/001/s0-l0-0.gz', bytes);
      await objects.put('ns/001/manifest.json', Buffer.from('{}'));
      await objects.put('other/001/manifest.json', Buffer.from('{}'));
      expect(await objects.get('ns/001/s0-l0-0.gz')).toEqual(bytes);
      expect(await objects.get('ns/002/manifest.json')).toBeNull();
      expect((await objects.list('ns/')).sort()).toEqual(['ns/001/manifest.json', 'ns/001/s0-l0-0.gz']);
      await objects.put('ns/001/manifest.json', Buffer.from('{"v":2}'));
      expect((await objects.get('ns/001/manifest.json'))?.toString()).toBe('{"v":2}');
      await objects.delete(['ns/001/s0-l0-0.gz', 'ns/001/absent']);
      expect(await objects.list('ns/')).toEqual(['ns/001/manifest.json']);
      expect(await objects.list('nothing/')).toEqual([]);
      objects.close();
    });

    it('refuses names that could leave its folder', async () => {
      const objects = await make();
      for (const bad of ['../x', '/abs', 'a/../../b', 'a//b', '']) await expect(objects.put(bad, Buffer.from('x'))).rejects.toMatchObject({ code: 'ERR_STORE' });
      objects.close();
    });
  });
}

namedObjectsContract('LocalNamedObjects', async () => new LocalNamedObjects(await tempDir()));
namedObjectsContract('S3NamedObjects', async () => new S3NamedObjects({ bucket: BUCKET, prefix: `t-${randomUUID().slice(0, 8)}`, client: s3.client }));

describe('named objects beside the content store', () => {
  it('a local put leaves no temp file, and a stray temp file (a killed put) is never listed', async () => {
    const dir = await tempDir();
    const objects = new LocalNamedObjects(dir);
    await objects.put('ns/1/a', Buffer.from('a'));
    expect(await readdir(join(dir, 'ns/1'))).toEqual(['a']);
    await writeFile(join(dir, 'ns/1/b.123abc.tmp'), 'half');
    expect(await objects.list('ns/')).toEqual(['ns/1/a']);
  });

  it('createNamedObjects puts them in a folder of the configured store: the content directory, or the bucket under its prefix', async () => {
    const dir = await tempDir();
    const local = createNamedObjects(loadConfig({ env: { TRAWL_CONTENT_DIR: dir } }), 'seen-snapshots');
    await local.put('ns/x', Buffer.from('1'));
    expect(await readdir(join(dir, 'seen-snapshots', 'ns'))).toEqual(['x']);

    const prefix = `crawl-${randomUUID().slice(0, 8)}`;
    const config = loadConfig({ env: { TRAWL_CONTENT_STORE: 's3', TRAWL_S3_BUCKET: BUCKET, TRAWL_S3_PREFIX: prefix, TRAWL_S3_ENDPOINT: s3.endpoint, TRAWL_S3_FORCE_PATH_STYLE: 'true' } });
    const remote = createNamedObjects(config, 'seen-snapshots', s3.client);
    await remote.put('ns/y', Buffer.from('2'));
    const raw = new S3NamedObjects({ bucket: BUCKET, client: s3.client });
    expect(await raw.list(`${prefix}/`)).toEqual([`${prefix}/seen-snapshots/ns/y`]);
    remote.close();
    raw.close();
  });
});
