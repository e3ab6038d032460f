import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { WARCParser, type WARCRecord } from 'warcio';

/** A record read back, with its payload (HTTP body, or the block of a non-HTTP record). */
export interface ReadRecord {
  record: WARCRecord;
  type: string;
  url: string | null;
  header: (name: string) => string | null;
  payload: Buffer;
}

/** Every record of a WARC file (gzip or not), payloads read raw (as recorded). */
export async function readWarc(path: string): Promise<ReadRecord[]> {
  const out: ReadRecord[] = [];
  for await (const record of new WARCParser(createReadStream(path))) {
    const payload = Buffer.from(await record.readFully(false));
    out.push({
      record,
      type: record.warcType,
      url: record.warcTargetURI ?? null,
      header: (name) => record.warcHeader(name) ?? null,
      payload,
    });
  }
  return out;
}

/** The one record stored at [offset, offset + length) of a file, as a CDXJ line points at it. */
export async function readRecordAt(path: string, offset: number, length: number): Promise<ReadRecord> {
  const file = await open(path, 'r');
  try {
    const bytes = Buffer.alloc(length);
    await file.read(bytes, 0, length, offset);
    const parser = new WARCParser([bytes]);
    const record = await parser.parse();
    if (record === null) throw new Error(`no record at ${path}:${offset}`);
    const payload = Buffer.from(await record.readFully(false));
    return { record, type: record.warcType, url: record.warcTargetURI ?? null, header: (name) => record.warcHeader(name) ?? null, payload };
  } finally {
    await file.close();
  }
}
