import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isDataError, writeIsolating } from './isolate.js';

/** A server error as pg raises it (the same class pg builds from the wire). */
function serverError(code: string, message = `error ${code}`): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, 'error');
  error.code = code;
  return error;
}

describe('isDataError', () => {
  it.each<[string, unknown, boolean]>([
    ['check violation', serverError('23514'), true],
    ['not-null violation', serverError('23502'), true],
    ['value too long', serverError('22001'), true],
    ['numeric out of range', serverError('22003'), true],
    ['invalid text representation', serverError('22P02'), true],
    ['NUL in text', serverError('22021'), true],
    ['deadlock', serverError('40P01'), false],
    ['serialization failure', serverError('40001'), false],
    ['connection failure', serverError('08006'), false],
    ['admin shutdown', serverError('57P01'), false],
    ['syntax error (a bug, not a row)', serverError('42601'), false],
    ['a socket error', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), false],
    ['not an error', '23514', false],
  ])('%s', (_name, error, expected) => {
    expect(isDataError(error)).toBe(expected);
  });
});

describe('writeIsolating', () => {
  /** A writer that refuses any statement containing a bad row, and logs each statement. */
  const writer = (bad: Set<number>, code = '23514') => {
    const statements: number[][] = [];
    const write = async (rows: readonly number[]) => {
      statements.push([...rows]);
      const culprit = rows.find((r) => bad.has(r));
      if (culprit !== undefined) throw serverError(code, `row ${culprit} violates a check`);
      return rows.length;
    };
    return { statements, write };
  };

  it('writes a clean batch in one statement', async () => {
    const { statements, write } = writer(new Set());
    const rows = Array.from({ length: 100 }, (_, i) => i);
    expect(await writeIsolating(rows, write)).toEqual({ results: [100], rejected: [] });
    expect(statements).toHaveLength(1);
  });

  it('isolates the bad rows, writes the rest, in order, and says why', async () => {
    const { statements, write } = writer(new Set([3, 64, 65]));
    const rows = Array.from({ length: 100 }, (_, i) => i);
    const { results, rejected } = await writeIsolating(rows, write);
    expect(results.reduce((a, b) => a + b, 0)).toBe(97);
    expect(rejected.map((r) => [r.row, r.sqlState])).toEqual([
      [3, '23514'],
      [64, '23514'],
      [65, '23514'],
    ]);
    expect(rejected[0]?.reason).toBe('ERR_DATABASE: PostgreSQL refused the row: row 3 violates a check [SQLSTATE 23514]');
    // Every row is written exactly once, in ascending order across statements (lock order kept).
    const written = statements.filter((s) => !s.some((r) => [3, 64, 65].includes(r))).flat();
    expect(written).toEqual(rows.filter((r) => ![3, 64, 65].includes(r)));
    // Bounded: about 2·k·log2(n) statements for k bad rows, not one per row.
    expect(statements.length).toBeLessThanOrEqual(2 * 3 * Math.ceil(Math.log2(100)) + 1);
  });

  it('rejects every row of a batch that is all bad, one by one', async () => {
    const { write } = writer(new Set([0, 1, 2]), '22021');
    const { results, rejected } = await writeIsolating([0, 1, 2], write);
    expect(results).toEqual([]);
    expect(rejected.map((r) => r.row)).toEqual([0, 1, 2]);
  });

  it.each(['40P01', '40001', '08006'])('throws %s (not a data error) instead of splitting', async (code) => {
    let calls = 0;
    const write = async () => {
      calls += 1;
      throw serverError(code);
    };
    await expect(writeIsolating([1, 2, 3, 4], write)).rejects.toMatchObject({ code });
    expect(calls).toBe(1);
  });
});
