import { randomUUID } from 'node:crypto';
import { Database } from '../database.js';

/** Where tests find PostgreSQL: DATABASE_URL, else the standard local server. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A migrated schema of this test file's own, dropped by cleanup. */
export async function testDatabase(label = 'test'): Promise<{ db: Database; schema: string; cleanup: () => Promise<void> }> {
  const schema = `t_${label}_${randomUUID().slice(0, 8)}`.replace(/[^a-z0-9_]/g, '_');
  const db = new Database({ url: TEST_DATABASE_URL, schema, poolSize: 4, applicationName: `trawl-test-${label}` });
  await db.migrate();
  return {
    db,
    schema,
    async cleanup() {
      await db.dropSchema();
      await db.close();
    },
  };
}
export { discovered, fp, record } from './records.js';
