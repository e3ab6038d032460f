import { ErrorCode } from '@trawl/core';
import pg from 'pg';

/** A row PostgreSQL refused, and why; the rest of its batch was written. */
export interface Rejection<T> {
  row: T;
  /** SQLSTATE, e.g. 23514 (check violation), 22001 (value too long), 22P02 (invalid text). */
  sqlState: string;
  /** `ERR_DATABASE: …`, fit for a dead-letter reason. */
  reason: string;
}

/**
 * True for errors caused by the data of some row: SQLSTATE class 22 (data exception) and 23
 * (integrity constraint violation). Everything else (connection loss, serialization failure,
 * deadlock, shutdown, a bug in the statement) is about the attempt, not a row, and is thrown.
 */
export function isDataError(error: unknown): error is pg.DatabaseError {
  return error instanceof pg.DatabaseError && typeof error.code === 'string' && /^2[23]/.test(error.code);
}

export function rejectionReason(error: pg.DatabaseError): string {
  const detail = error.detail ? ` (${error.detail})` : '';
  return `${ErrorCode.Database}: PostgreSQL refused the row: ${error.message}${detail} [SQLSTATE ${error.code}]`;
}

/**
 * Writes `rows` with one statement; when PostgreSQL refuses it for a data error, splits the batch
 * in halves and tries each (in order), down to single rows, so one bad row costs only itself:
 * k bad rows among n cost about 2·k·log2(n) extra statements. Each statement runs on its own
 * (autocommit), so a refused one leaves nothing behind. Errors that are not data errors are
 * thrown, with whatever earlier halves wrote already committed (every write here is an
 * idempotent upsert, so the caller retries the whole batch).
 */
export async function writeIsolating<T, R>(
  rows: readonly T[],
  write: (rows: readonly T[]) => Promise<R>,
): Promise<{ results: R[]; rejected: Rejection<T>[] }> {
  const results: R[] = [];
  const rejected: Rejection<T>[] = [];
  const attempt = async (part: readonly T[]): Promise<void> => {
    if (part.length === 0) return;
    try {
      results.push(await write(part));
    } catch (error) {
      if (!isDataError(error)) throw error;
      if (part.length === 1) {
        rejected.push({ row: part[0] as T, sqlState: error.code as string, reason: rejectionReason(error) });
        return;
      }
      const middle = Math.ceil(part.length / 2);
      await attempt(part.slice(0, middle));
      await attempt(part.slice(middle));
    }
  };
  await attempt(rows);
  return { results, rejected };
}
