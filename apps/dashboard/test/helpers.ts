import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { loadConfig } from '@trawl/config';
import { dropNamespace as dropNamespaceOn } from '@trawl/runtime/testing';
import { Runtime } from '@trawl/runtime';
import { createLogger } from '@trawl/telemetry';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const TOKEN_A = `tok-a-${randomUUID()}`;
export const TOKEN_B = `tok-b-${randomUUID()}`;
export const TOKEN_C = `tok-c-${randomUUID()}`;

/** Everything a test's processes logged, to check that no secret ever appears in it. */
export class LogCapture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

export async function openRuntime(namespace: string, env: Record<string, string>, logs: LogCapture): Promise<Runtime> {
  const config = loadConfig({ env: { TRAWL_NAMESPACE: namespace, TRAWL_API_TOKENS: `${TOKEN_A},${TOKEN_B},${TOKEN_C}`, ...env } });
  const logger = createLogger({ level: 'info', name: 'dashboard-test', destination: logs });
  return Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger, role: 'dashboard' });
}

/** Removes everything a test or benchmark namespace left: its Redis keys and PostgreSQL schema. */
export function dropNamespace(namespace: string): Promise<void> {
  return dropNamespaceOn(namespace, { redisUrl: REDIS_URL, databaseUrl: DATABASE_URL });
}

export const uniqueNamespace = (label: string) => `t_${label}_${randomUUID().slice(0, 8)}`;
