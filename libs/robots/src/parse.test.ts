import { describe, expect, it } from 'vitest';
import { parseRobots } from './parse.js';
import { matchForm, ROBOTS_MAX_BYTES, robotsText } from './text.js';

const ORIGIN = 'https://example.com';
const ROBOTS = `${ORIGIN}/robots.txt`;
const TOKEN = 'trawl';

/** A body just over the 500 KiB limit, with a rule before the cut and one after it. */
function oversized(): string {
  const head = 'User-agent: trawl\nDisallow: /early\n';
  const filler = `# ${'x'.repeat(97)}\n`; // 100 bytes a line
  let body = head;
  while (Buffer.byteLength(body) + filler.length <= ROBOTS_MAX_BYTES - 40) body += filler;
  body += 'Disallow: /near-the-end\n'; // ends before the cut: kept
  // This line straddles the cut: its first half, `Allow: /near-the-end/but-this-line-is-cut`, would
  // allow what the whole line does not, so the incomplete line must be dropped.
  const straddle = 'Allow: /near-the-end/but-this-line-is-cut-in-the-middle\n';
  const straddleAt = Buffer.byteLength(body);
  if (straddleAt >= ROBOTS_MAX_BYTES - 20 || straddleAt + straddle.length <= ROBOTS_MAX_BYTES) throw new Error('oversized(): the cut must fall inside the straddling line');
  body += straddle;
  body += 'Disallow: /late\n';
  return body;
}

/** Bytes that are not a robots.txt at all. */
const garbageBytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256));

type Case = [name: string, body: string | Buffer, expectations: Array<[path: string, allowed: boolean]>];

const cases: Case[] = [
  // RFC 9309 §2.2.1: the group naming our product token applies, not `*`.
  ['our group beats *', 'User-agent: *\nDisallow: /\n\nUser-agent: trawl\nDisallow: /private\n', [
    ['/', true], ['/private', false], ['/private/x', false], ['/public', true],
  ]],
  ['* applies when no group names us', 'User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /star\n', [
    ['/', true], ['/star', false], ['/other', true],
  ]],
  ['no group for us and no * group: no rules', 'User-agent: otherbot\nDisallow: /\n', [
    ['/', true], ['/anything', true],
  ]],
  ['a longer token is another crawler', 'User-agent: trawlbot\nDisallow: /\n\nUser-agent: trawl-news\nDisallow: /\n', [
    ['/', true],
  ]],
  ['token is case-insensitive (line value)', 'User-agent: TRAWL\nDisallow: /x\n', [['/x', false], ['/y', true]]],
  ['token with version', 'User-agent: Trawl/2.1\nDisallow: /y\n', [['/y', false], ['/x', true]]],
  ['token followed by a comment in parentheses', 'User-agent: *\nDisallow: /\n\nUser-agent: trawl (+https://trawl.example/bot)\nDisallow: /z\n', [
    ['/z', false], ['/a', true],
  ]],
  ['record names are case-insensitive', 'USER-AGENT: trawl\nDISALLOW: /upper\nallow: /upper/ok\n', [
    ['/upper', false], ['/upper/ok', true],
  ]],
  // RFC 9309 §2.2.1: groups naming the same agent are merged.
  ['merged groups', 'User-agent: trawl\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\nUser-agent: Trawl\nDisallow: /c\n', [
    ['/a', false], ['/b', true], ['/c', false], ['/d', true],
  ]],
  ['several user-agents share one group', 'User-agent: otherbot\nUser-agent: trawl\nDisallow: /shared\n', [
    ['/shared', false], ['/', true],
  ]],
  ['blank line between user-agent lines keeps one group', 'User-agent: otherbot\n\nUser-agent: trawl\nDisallow: /shared\n', [
    ['/shared', false],
  ]],
  ['our group without rules allows everything', 'User-agent: *\nDisallow: /\n\nUser-agent: trawl\n', [
    ['/', true], ['/x', true],
  ]],
  ['our group with an empty Disallow allows everything', 'User-agent: trawl\nDisallow:\n\nUser-agent: *\nDisallow: /\n', [
    ['/', true], ['/x', true],
  ]],
  ['rules before any user-agent are ignored', 'Disallow: /orphan\nUser-agent: trawl\nDisallow: /kept\n', [
    ['/orphan', true], ['/kept', false],
  ]],
  // RFC 9309 §2.1/§2.2.4: only a user-agent line after rules starts a new group; other records
  // between user-agent lines (Sitemap, Crawl-delay, unknown ones) leave them in one group.
  ['a Sitemap line between user-agent lines keeps one group', 'User-agent: trawl\nSitemap: https://example.com/s.xml\nUser-agent: otherbot\nDisallow: /shop\n', [
    ['/shop', false], ['/', true],
  ]],
  ['a Crawl-delay line between user-agent lines keeps one group', 'User-agent: *\nDisallow: /tmp/\n\nUser-agent: trawl\nCrawl-delay: 2\n\nUser-agent: newsbot\nDisallow: /\n', [
    ['/', false], ['/tmp/x', false],
  ]],
  ['an unknown record between user-agent lines keeps one group', 'User-agent: trawl\nRequest-rate: 1/10\nUser-agent: *\nDisallow: /cart\n', [
    ['/cart', false], ['/about', true],
  ]],
  ['a user-agent line after rules starts a new group', 'User-agent: trawl\nDisallow: /a\nUser-agent: otherbot\nDisallow: /b\n', [
    ['/a', false], ['/b', true],
  ]],
  // RFC 9309 §2.2.3: `*` and `$` are special only when literal; `%2A` and `%24` are the octets.
  ['%2A and %24 in a pattern are a literal * and $', 'User-agent: trawl\nDisallow: /img/photo-%2A.png\nDisallow: /price-%24\nDisallow: /q/%2a/x\n', [
    ['/img/photo-*.png', false], ['/img/photo-%2A.png', false], ['/img/photo-1.png', true],
    ['/price-$', false], ['/price-$/eur', false], ['/price-', true], ['/price-10', true],
    ['/q/*/x', false], ['/q/any/x', true],
  ]],
  ['a literal * still matches anything next to an escaped one', 'User-agent: trawl\nDisallow: /*%2A$\n', [
    ['/a/b*', false], ['/a/b', true],
  ]],
  // RFC 9309 §2.2.2: the longest match wins, whatever the order.
  ['longest match', 'User-agent: trawl\nAllow: /folder/page\nDisallow: /folder\nDisallow: /folder/page/secret\nAllow: /p\nDisallow: /\n', [
    ['/folder', false], ['/folder/other', false], ['/folder/page', true], ['/folder/page/x', true],
    ['/folder/page/secret/1', false], ['/p', true], ['/pages', true], ['/q', false],
  ]],
  ['longest match, rules reversed', 'User-agent: trawl\nDisallow: /\nAllow: /p\nDisallow: /folder/page/secret\nDisallow: /folder\nAllow: /folder/page\n', [
    ['/folder', false], ['/folder/page', true], ['/folder/page/secret/1', false], ['/p', true], ['/q', false],
  ]],
  ['longer Disallow beats shorter Allow', 'User-agent: trawl\nAllow: /a\nDisallow: /a/b\n', [['/a/b/c', false], ['/a/c', true]]],
  // RFC 9309 §2.2.2: equal length, Allow wins.
  ['allow wins a tie (disallow first)', 'User-agent: trawl\nDisallow: /page\nAllow: /page\n', [['/page', true], ['/pages', true]]],
  ['allow wins a tie (allow first)', 'User-agent: trawl\nAllow: /page\nDisallow: /page\n', [['/page', true]]],
  ['allow wins a tie between wildcard patterns', 'User-agent: trawl\nDisallow: /x/\nAllow: /x*\n', [['/x/', true], ['/x/y', true]]],
  // RFC 9309 §2.2.3: `*` and `$`.
  ['* and $', 'User-agent: trawl\nDisallow: /*.gif$\nDisallow: /private*/\nDisallow: /*?session=\n', [
    ['/a.gif', false], ['/dir/b.gif', false], ['/a.gif?x=1', true], ['/a.gifx', true],
    ['/private/', false], ['/privatestuff/x', false], ['/private', true],
    ['/x?session=1', false], ['/x?a=1&session=2', true],
  ]],
  ['/$ matches only the root', 'User-agent: trawl\nDisallow: /$\n', [['/', false], ['/index.html', true]]],
  ['$ inside a pattern is literal', 'User-agent: trawl\nDisallow: /a$b\n', [['/a$b', false], ['/a', true], ['/ab', true]]],
  ['trailing * changes nothing', 'User-agent: trawl\nDisallow: /fish*\n', [['/fish', false], ['/fishheads', false], ['/Fish', true]]],
  ['runs of * and * across segments', 'User-agent: trawl\nDisallow: /**/x\n', [['/a/b/x', false], ['/a/x', false], ['/x', true]]],
  ['lone * disallows everything', 'User-agent: trawl\nDisallow: *\n', [['/', false], ['/a', false]]],
  ['Allow $ carves out an exact path', 'User-agent: trawl\nDisallow: /dir/\nAllow: /dir/$\n', [['/dir/', true], ['/dir/x', false]]],
  ['query strings are part of the path', 'User-agent: trawl\nDisallow: /search?q=\nDisallow: /*?\n', [
    ['/search', true], ['/search?q=x', false], ['/a?b', false], ['/a', true],
  ]],
  ['paths are case-sensitive', 'User-agent: trawl\nDisallow: /Private\n', [['/Private', false], ['/private', true]]],
  // RFC 9309 §2.2.2: octets compared in one percent-encoding.
  ['escape and raw character are equal', 'User-agent: trawl\nDisallow: /a%3cd\nDisallow: /b<d\n', [
    ['/a<d', false], ['/a%3Cd', false], ['/a%3cd', false], ['/b<d', false], ['/b%3cd', false], ['/abd', true],
  ]],
  ['escaped unreserved characters are unescaped', 'User-agent: trawl\nDisallow: /%7Ejoe/\nDisallow: /foo/bar/baz\n', [
    ['/~joe/', false], ['/%7ejoe/', false], ['/foo/bar/%62%61%7A', false], ['/foo/bar/qux', true],
  ]],
  ['non-ASCII in UTF-8 escapes', 'User-agent: trawl\nDisallow: /café\nDisallow: /foo/bar/ツ\nDisallow: /na%C3%AFve\n', [
    ['/café', false], ['/caf%C3%A9', false], ['/caf%c3%a9', false], ['/foo/bar/%E3%83%84', false],
    ['/naïve', false], ['/cafe', true],
  ]],
  ['escaped reserved characters stay distinct', 'User-agent: trawl\nDisallow: /x%2Fy\nDisallow: /q?k=v%26w\n', [
    ['/x%2fy', false], ['/x/y', true], ['/q?k=v%26w', false], ['/q?k=v&w', true],
  ]],
  ['characters not allowed raw in a URL', 'User-agent: trawl\nDisallow: /sp ace\nDisallow: /a[1]\nDisallow: /p|q\n', [
    ['/sp%20ace', false], ['/sp ace', false], ['/a[1]', false], ['/a%5B1%5D', false], ['/p|q', false], ['/p%7Cq', false],
  ]],
  // Syntax: comments, blank lines, whitespace, line ends, BOM.
  ['comments, blank lines and whitespace', '# a comment\nUser-agent: trawl # inline\n\n   Disallow:   /spaced   # trailing\nDisallow: /hash#not-part\n# Disallow: /commented\n', [
    ['/spaced', false], ['/spacedout', false], ['/hash', false], ['/commented', true],
  ]],
  ['CRLF line ends', 'User-agent: trawl\r\nDisallow: /crlf\r\nAllow: /crlf/ok\r\n', [['/crlf', false], ['/crlf/ok', true]]],
  ['CR line ends', 'User-agent: trawl\rDisallow: /cr\r', [['/cr', false], ['/x', true]]],
  ['UTF-8 BOM (string)', '\uFEFFUser-agent: trawl\nDisallow: /bom\n', [['/bom', false], ['/x', true]]],
  ['UTF-8 BOM (bytes)', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('User-agent: trawl\nDisallow: /bom\n')]), [
    ['/bom', false],
  ]],
  ['lines without a colon are ignored', 'User-agent: trawl\nDisallow /nocolon\nDisallow: /colon\n', [['/nocolon', true], ['/colon', false]]],
  // RFC 9309 §2.5: only the first 500 KiB.
  ['500 KiB cut-off', oversized(), [['/early', false], ['/near-the-end', false], ['/near-the-end/but-this-line-is-cut-in-the-middle', false], ['/late', true]]],
  // RFC 9309 §2.2.2: /robots.txt is implicitly allowed.
  ['/robots.txt is always allowed', 'User-agent: *\nDisallow: /\nDisallow: /robots.txt\n', [['/robots.txt', true], ['/', false], ['/robots.txt.bak', false]]],
  // Empty and garbage.
  ['empty file allows all', '', [['/', true], ['/anything', true]]],
  ['whitespace-only file allows all', ' \n\n\t\r\n', [['/', true]]],
  ['HTML instead of robots.txt', '<html><body><p>Disallow: /</p></body></html>', [['/', true]]],
  ['garbage bytes', garbageBytes, [['/', true], ['/x', true]]],
  ['NUL bytes', Buffer.alloc(1024), [['/', true]]],
  ['invalid UTF-8 inside a rule', Buffer.concat([Buffer.from('User-agent: trawl\nDisallow: /bad'), Buffer.from([0xff, 0xfe]), Buffer.from('\nDisallow: /good\n')]), [
    ['/good', false], ['/bad%EF%BF%BD%EF%BF%BD', false], ['/other', true],
  ]],
];

const rows = cases.flatMap(([name, body, expectations]) => expectations.map(([path, allowed]) => [name, path, allowed, body] as const));

describe('parseRobots: robots.txt × URL → allowed', () => {
  it.each(rows)('%s: %s → %s', (_name, path, allowed, body) => {
    expect(parseRobots(ROBOTS, body, TOKEN).isAllowed(`${ORIGIN}${path}`)).toBe(allowed);
  });

  it('has the table it claims', () => {
    expect(rows.length).toBeGreaterThanOrEqual(130);
  });
});

describe('parseRobots: other inputs', () => {
  const rules = parseRobots(ROBOTS, 'User-agent: *\nDisallow: /x\n', TOKEN);

  it.each([
    ['http://example.com/', 'another scheme'],
    ['https://example.com:8443/', 'another port'],
    ['https://other.example/', 'another host'],
    ['not a url', 'not a URL'],
  ])('never allows a URL of another origin: %s (%s)', (url) => {
    expect(rules.isAllowed(url)).toBe(false);
  });

  it('treats an explicit default port as the same origin', () => {
    expect(rules.isAllowed('https://example.com:443/y')).toBe(true);
  });

  it('lists the rules that apply to us, in precedence order', () => {
    const rules = parseRobots(ROBOTS, 'User-agent: *\nDisallow: /all\n\nUser-agent: trawl\nDisallow: /a\nAllow: /a/b\nDisallow: /private$\n', TOKEN).rules;
    expect(rules).toEqual([
      { allow: false, pattern: '/private$' },
      { allow: true, pattern: '/a/b' },
      { allow: false, pattern: '/a' },
    ]);
  });

  it('names the deciding rule', () => {
    expect(rules.matchingRule(`${ORIGIN}/x/1`)).toEqual({ allow: false, pattern: '/x' });
    expect(rules.matchingRule(`${ORIGIN}/y`)).toBeNull();
  });

  it('accepts a product token in any case or with a version', () => {
    const body = 'User-agent: trawl\nDisallow: /\n';
    expect(parseRobots(ROBOTS, body, 'TRAWL').isAllowed(`${ORIGIN}/`)).toBe(false);
    expect(parseRobots(ROBOTS, body, 'trawl/0.1').isAllowed(`${ORIGIN}/`)).toBe(false);
  });

  it('refuses a product token that cannot name a group', () => {
    expect(() => parseRobots(ROBOTS, '', '*')).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => parseRobots(ROBOTS, '', '  ')).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
  });

  it('never throws on random bytes', () => {
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const alphabet = 'User-agent:Disallow:Allow:Crawl-delay:Sitemap:*$%#/\n\r \t\u0000\uFFFDé%zz%4';
    for (let round = 0; round < 300; round++) {
      const bytes = Buffer.from(Array.from({ length: next() % 2000 }, () => next() % 256));
      const text = Array.from({ length: next() % 400 }, () => alphabet[next() % alphabet.length]).join('');
      for (const body of [bytes, text]) {
        const rules = parseRobots(ROBOTS, body, TOKEN);
        expect(typeof rules.isAllowed(`${ORIGIN}/${text.slice(0, 20)}`)).toBe('boolean');
        expect(rules.crawlDelayMs === null || Number.isFinite(rules.crawlDelayMs)).toBe(true);
      }
    }
  });

  it('parses a full 500 KiB of rules in reasonable time', () => {
    const lines = ['User-agent: trawl'];
    let size = 0;
    for (let i = 0; size < ROBOTS_MAX_BYTES; i++) {
      const line = `Disallow: /section-${i}/*/page$`;
      lines.push(line);
      size += line.length + 1;
    }
    const started = performance.now();
    const rules = parseRobots(ROBOTS, lines.join('\n'), TOKEN);
    for (let i = 0; i < 50; i++) rules.isAllowed(`${ORIGIN}/section-${i * 100}/x/page`);
    expect(rules.isAllowed(`${ORIGIN}/section-7/a/b/page`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('Crawl-delay', () => {
  it.each([
    ['fractional seconds', 'User-agent: trawl\nCrawl-delay: 2.5\n', 2500],
    ['tenths', 'User-agent: trawl\nCrawl-delay: 0.1\n', 100],
    ['our group, not *', 'User-agent: *\nCrawl-delay: 10\n\nUser-agent: trawl\nCrawl-delay: 1\n', 1000],
    ['our group has none: none, even if * has one', 'User-agent: *\nCrawl-delay: 10\n\nUser-agent: trawl\nDisallow: /x\n', null],
    ['from * when no group names us', 'User-agent: *\nCrawl-delay: 7\n', 7000],
    ['another crawler’s delay is not ours', 'User-agent: otherbot\nCrawl-delay: 5\n', null],
    ['from a merged group', 'User-agent: trawl\nDisallow: /a\n\nUser-agent: trawl\nCrawl-delay: 3\n', 3000],
    ['addressed to the user-agent lines just above it', 'User-agent: otherbot\nCrawl-delay: 9\nUser-agent: trawl\nCrawl-delay: 4\nUser-agent: *\nDisallow: /x\n', 4000],
    ['not to a later run of the same group', 'User-agent: trawl\nCrawl-delay: 1\nUser-agent: otherbot\nCrawl-delay: 8\nDisallow: /x\n', 1000],
    ['after the rules, to the run above them', 'User-agent: trawl\nDisallow: /x\nCrawl-delay: 6\n', 6000],
    ['not from before any user-agent line', 'Crawl-delay: 5\nUser-agent: trawl\nDisallow: /x\n', null],
    ['missing', 'User-agent: trawl\nDisallow: /a\n', null],
    ['not a number', 'User-agent: trawl\nCrawl-delay: soon\n', null],
    ['negative', 'User-agent: trawl\nCrawl-delay: -3\n', null],
    ['empty: no delay', 'User-agent: trawl\nCrawl-delay:\n', null],
    ['case-insensitive record name', 'User-agent: trawl\nCRAWL-DELAY: 4\n', 4000],
    ['empty file', '', null],
  ])('%s', (_name, body, expected) => {
    expect(parseRobots(ROBOTS, body, TOKEN).crawlDelayMs).toBe(expected);
  });
});

describe('Sitemap', () => {
  it.each([
    ['in any group, and outside groups', 'Sitemap: https://example.com/s1.xml\nUser-agent: otherbot\nSitemap: https://cdn.example.net/s2.xml\nDisallow: /\n', [
      'https://example.com/s1.xml', 'https://cdn.example.net/s2.xml',
    ]],
    ['relative, non-http and invalid values are dropped', 'Sitemap: /relative.xml\nSitemap: ftp://example.com/s.xml\nSitemap: not a url\nSitemap:\n', []],
    ['duplicates once, record name case-insensitive', 'sitemap: https://example.com/s.xml\nSITEMAP: https://example.com/s.xml\n', ['https://example.com/s.xml']],
    ['commented out', '# Sitemap: https://example.com/s.xml\n', []],
    ['CRLF and spaces', 'Sitemap:   https://example.com/a.xml   \r\n', ['https://example.com/a.xml']],
  ])('%s', (_name, body, expected) => {
    expect(parseRobots(ROBOTS, body, TOKEN).sitemaps).toEqual(expected);
  });
});

describe('matchForm and robotsText', () => {
  it.each([
    ['/plain/path?q=1&r=2', '/plain/path?q=1&r=2'],
    ['/a%3cd', '/a%3Cd'],
    ['/a<d', '/a%3Cd'],
    ['/%7Ejoe/%41', '/~joe/A'],
    ['/café', '/caf%C3%A9'],
    ['/x%2fy', '/x%2Fy'],
    ['/100%', '/100%25'],
    ['/%zz', '/%25zz'],
    ['/*.gif$', '/*.gif$'],
    ['/a[1]|b', '/a%5B1%5D%7Cb'],
  ])('%s → %s (idempotent)', (input, expected) => {
    expect(matchForm(input)).toBe(expected);
    expect(matchForm(expected)).toBe(expected);
  });

  it('keeps a body up to the limit whole and cuts a longer one at a line end', () => {
    const exact = `${'a'.repeat(ROBOTS_MAX_BYTES - 1)}\n`;
    expect(robotsText(exact)).toBe(exact);
    const longer = `${'#'.repeat(100)}\n${'b'.repeat(ROBOTS_MAX_BYTES)}`;
    expect(robotsText(longer)).toBe(`${'#'.repeat(100)}\n`);
  });
});

describe('usage preferences (Content-Signal, Content-Usage)', () => {
  it.each([
    ['a global Content-Signal line', 'Content-Signal: search=yes, ai-train=no\nUser-agent: *\nAllow: /\n', [
      { record: 'content-signal', path: null, values: { search: 'yes', 'ai-train': 'no' } },
    ]],
    ['in our group and in *: ours only', 'User-agent: *\nContent-Signal: ai-input=no\n\nUser-agent: trawl\nContent-Usage: train-ai=n, search=y\nAllow: /\n', [
      { record: 'content-usage', path: null, values: { 'train-ai': 'n', search: 'y' } },
    ]],
    ['from * when no group names us', 'User-agent: otherbot\nContent-Usage: train-ai=y\nUser-agent: *\nDisallow:\n\nUser-agent: *\nContent-Usage: train-ai=n\n', [
      { record: 'content-usage', path: null, values: { 'train-ai': 'n' } },
    ]],
    ['with a path, case and spacing', 'User-agent: *\nCONTENT-USAGE: /archive/   Train-AI = N ,search="y"\n', [
      { record: 'content-usage', path: '/archive/', values: { 'train-ai': 'n', search: 'y' } },
    ]],
    ['malformed pairs skipped, empty records dropped', 'Content-Signal: nonsense\nContent-Signal: =yes, ai-train=, search=yes\n', [
      { record: 'content-signal', path: null, values: { search: 'yes' } },
    ]],
    ['another crawler’s preferences are not ours', 'User-agent: otherbot\nContent-Signal: ai-train=no\n', []],
  ])('%s', (_name, body, expected) => {
    expect(parseRobots(ROBOTS, body, TOKEN).usage).toEqual(expected);
  });

  it('never changes what is allowed', () => {
    const rules = parseRobots(ROBOTS, 'User-agent: trawl\nContent-Usage: train-ai=n\nContent-Signal: search=no\nDisallow: /private\n', TOKEN);
    expect(rules.isAllowed(`${ORIGIN}/page`)).toBe(true);
    expect(rules.isAllowed(`${ORIGIN}/private`)).toBe(false);
  });
});
