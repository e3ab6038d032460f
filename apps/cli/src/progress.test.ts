import { describe, expect, it } from 'vitest';
import { freshnessTable, terminalText } from './progress.js';

describe('text from the crawl in a terminal', () => {
  it('shows every control character as \\xNN: no ANSI escape, carriage return or bell from a page reaches the terminal', () => {
    const title = 'Hello\x1b[2J\x1b]0;owned\x07 world\r\x9b31m';
    const shown = terminalText(title);
    expect(shown).toBe('Hello\\x1b[2J\\x1b]0;owned\\x07 world\\x0d\\x9b31m');
    expect(shown).not.toMatch(/[\x00-\x1f\x7f-\x9f]/); // eslint-disable-line no-control-regex
    expect(terminalText('plain café ✓')).toBe('plain café ✓');
  });

  it('in the freshness table too', () => {
    const row = { host: 'evil\x1b[31m.example', pages: 1, medianChangeIntervalS: null, overdue: 0, oldestOverdueS: null, recrawls: 0, late: 0, deadlineMissRate: null };
    expect(freshnessTable([row] as unknown as Parameters<typeof freshnessTable>[0])).not.toContain('\x1b');
  });
});
