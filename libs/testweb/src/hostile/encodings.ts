/**
 * Pages whose bytes are not UTF-8 (or not valid), each linking to a page whose path exists only
 * when the link was decoded with the right charset. Paths of links are written raw in the page's
 * own encoding; WHATWG URL parsing then percent-encodes the decoded characters as UTF-8, so
 * `café` in an ISO-8859-1 page (byte E9) must become `/caf%C3%A9`, not `/caf%EF%BF%BD`.
 */

/**
 * WHATWG index-windows-1252 for bytes 0x80–0x9F (the rest is ISO-8859-1). Written out because
 * Node ≥ 20.18.3 / 22.13's TextDecoder('windows-1252') decodes these bytes as C1 controls
 * (nodejs/node#60888): the testweb must not share the bug it is there to catch.
 */
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];
const CP1252 = new Map(CP1252_HIGH.map((code, i) => [String.fromCodePoint(code), 0x80 + i]));

/** windows-1252 bytes to text, as browsers decode pages labelled windows-1252, ISO-8859-1, latin1 or ascii. */
export function decodeWindows1252(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b >= 0x80 && b < 0xa0 ? (CP1252_HIGH[b - 0x80] as number) : b);
  return text;
}

/** The few characters the Shift_JIS page uses, as JIS X 0208 double bytes. */
const SHIFT_JIS: Record<string, [number, number]> = {
  日: [0x93, 0xfa],
  本: [0x96, 0x7b],
  語: [0x8c, 0xea],
  の: [0x82, 0xcc],
  ペ: [0x83, 0x79],
  ー: [0x81, 0x5b],
  ジ: [0x83, 0x57],
};

function encodeWith(text: string, single: (char: string, code: number) => number[] | null): Buffer {
  const bytes: number[] = [];
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    const encoded = code < 0x80 ? [code] : single(char, code);
    if (encoded === null) throw new Error(`cannot encode ${JSON.stringify(char)}`);
    bytes.push(...encoded);
  }
  return Buffer.from(bytes);
}

export const encodeLatin1 = (text: string): Buffer => encodeWith(text, (_c, code) => (code <= 0xff ? [code] : null));
export const encodeCp1252 = (text: string): Buffer =>
  encodeWith(text, (char, code) => {
    const special = CP1252.get(char);
    return special !== undefined ? [special] : code >= 0xa0 && code <= 0xff ? [code] : null;
  });
export const encodeShiftJis = (text: string): Buffer => encodeWith(text, (char) => SHIFT_JIS[char] ?? null);

export interface EncodedPage {
  /** Path of the page. */
  path: string;
  contentType: string;
  body: Buffer;
  /** Canonical paths (percent-encoded UTF-8) of the pages its links name when decoded right. */
  targets: string[];
  /** What the charset trap is. */
  note: string;
}

const doc = (head: string, title: string, body: string): string =>
  `<!doctype html>\n<html><head>${head}<title>${title}</title></head>\n<body>\n<h1>${title}</h1>\n${body}\n</body>\n</html>\n`;

/** The five trap pages of the 'encodings' host. */
export function encodedPages(): EncodedPage[] {
  const invalid = Buffer.concat([
    Buffer.from('<!doctype html>\n<html><head><meta charset="utf-8"><title>broken bytes</title></head>\n<body>\n<p>Before the damage: ', 'utf8'),
    // A lone continuation byte, a bad two-byte sequence, a truncated three-byte one, an encoded
    // surrogate and an overlong '/': a decoder must replace each with U+FFFD and carry on.
    Buffer.from([0xff, 0x20, 0xc3, 0x28, 0x20, 0xe2, 0x82, 0x20, 0xed, 0xa0, 0x80, 0x20, 0xc0, 0xaf]),
    Buffer.from('</p>\n<ul><li><a href="/enc/invalid/ok">ok</a></li><li><a href="/enc/invalid/résumé">résumé</a></li></ul>\n</body>\n</html>\n', 'utf8'),
  ]);
  return [
    {
      path: '/enc/latin1',
      contentType: 'text/html; charset=ISO-8859-1',
      body: encodeLatin1(doc('', 'Café latin-1', '<p>Naïve façade, ½ price.</p>\n<ul><li><a href="/enc/latin1/café">café</a></li></ul>')),
      targets: ['/enc/latin1/caf%C3%A9'],
      note: 'charset from the Content-Type header only; byte E9 in the href',
    },
    {
      path: '/enc/cp1252',
      contentType: 'text/html',
      body: encodeCp1252(
        doc('<meta charset="windows-1252">', '“Smart” quotes', '<p>It’s €5 — “quoted” – ‚low‘.</p>\n<ul><li><a href="/enc/cp1252/“quoted”">“quoted”</a></li></ul>'),
      ),
      targets: ['/enc/cp1252/%E2%80%9Cquoted%E2%80%9D'],
      note: 'charset from <meta charset>; bytes 93/94 are curly quotes in windows-1252, C1 controls in strict ISO-8859-1 ' +
        "(and in Node ≥ 20.18.3/22.13's TextDecoder('windows-1252'), nodejs/node#60888)",
    },
    {
      path: '/enc/sjis',
      contentType: 'text/html',
      body: encodeShiftJis(
        doc('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">', '日本語のページ', '<ul><li><a href="/enc/sjis/日本">日本</a></li></ul>'),
      ),
      targets: ['/enc/sjis/%E6%97%A5%E6%9C%AC'],
      note: 'charset from <meta http-equiv="Content-Type">; double-byte Shift_JIS in the href',
    },
    {
      path: '/enc/bom',
      contentType: 'text/html',
      body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(doc('', 'BOM only', '<ul><li><a href="/enc/bom/naïve">naïve</a></li></ul>'), 'utf8')]),
      targets: ['/enc/bom/na%C3%AFve'],
      note: 'no charset anywhere but a UTF-8 byte order mark (which wins over everything, WHATWG encoding sniffing)',
    },
    {
      path: '/enc/invalid',
      contentType: 'text/html; charset=utf-8',
      body: invalid,
      targets: ['/enc/invalid/ok', '/enc/invalid/r%C3%A9sum%C3%A9'],
      note: 'declared UTF-8 with invalid sequences before the links: decode with replacement, keep the links',
    },
  ];
}
