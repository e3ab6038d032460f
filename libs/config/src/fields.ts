import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Leaf schemas that accept either a typed value (config file, CLI flags) or the string an
 * environment variable holds, and convert it strictly: "abc" is not a number, "0"/"false" are
 * false, and an empty variable counts as unset.
 */
const fromString =
  (convert: (s: string) => unknown) =>
  (value: unknown): unknown =>
    typeof value === 'string' ? convert(value.trim()) : value;

export const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(
    fromString((s) => (/^-?\d+$/.test(s) ? Number(s) : s)),
    z.number({ error: 'expected an integer' }).int('expected an integer').min(min).max(max),
  );

export const num = (min: number, max: number) =>
  z.preprocess(
    fromString((s) => (s !== '' && Number.isFinite(Number(s)) ? Number(s) : s)),
    z.number({ error: 'expected a number' }).min(min).max(max),
  );

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);
export const bool = () =>
  z.preprocess(
    fromString((s) => (TRUE.has(s.toLowerCase()) ? true : FALSE.has(s.toLowerCase()) ? false : s)),
    z.boolean({ error: 'expected true/false (1/0, yes/no, on/off)' }),
  );

export const str = () => z.string().trim().min(1);

/** "a, b,,c" → ["a", "b", "c"]. */
export const splitList = (value: string): string[] =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);

export const list = () =>
  z.preprocess(
    fromString(splitList),
    z.array(z.string().min(1)),
  );

export const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess(fromString((s) => s.toLowerCase()), z.enum(values));

export const url = (protocols: readonly string[]) =>
  z
    .string()
    .trim()
    .refine((value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, `expected a ${protocols.map((p) => p.replace(':', '')).join(' or ')} URL`);

/**
 * A comma-separated list of URLs (one, or several: the seed nodes of a Redis Cluster). Whether a
 * list is allowed is decided with the settings that say so (see the config schema).
 */
export const urlList = (protocols: readonly string[]) => {
  const one = url(protocols);
  return z
    .string()
    .trim()
    .refine(
      (value) => splitList(value).length > 0 && splitList(value).every((part) => one.safeParse(part).success),
      `expected a ${protocols.map((p) => p.replace(':', '')).join(' or ')} URL, or several separated by commas`,
    );
};

/** "10.0.0.0/8", "127.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). */
export function isCidr(value: string): boolean {
  const [address, bits, extra] = value.split('/');
  if (extra !== undefined || address === undefined) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (bits === undefined) return true;
  if (!/^\d+$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/** A CIDR with an optional port or port range: `10.0.0.0/8`, `10.0.0.5:8080`, `10.1.0.0/16:8000-8099`, `[fd00::/8]:443`. */
export function isCidrWithPorts(value: string): boolean {
  const withPorts = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})(?:-(\d{1,5}))?$/.exec(value);
  if (withPorts === null) return isCidr(value);
  const from = Number(withPorts[3]);
  const to = withPorts[4] === undefined ? from : Number(withPorts[4]);
  return from >= 1 && to <= 65_535 && from <= to && isCidr((withPorts[1] ?? withPorts[2]) as string);
}

export const cidrList = () =>
  list().pipe(
    z.array(z.string().refine(isCidrWithPorts, 'expected CIDR ranges such as 127.0.0.0/8 or fd00::/8, each with an optional port or port range (10.0.0.5:8080, [fd00::/8]:8000-8099)')),
  );

/**
 * Which proxies' X-Forwarded-For / -Proto / -Host are believed (Fastify's trustProxy): false
 * (none), true (any: only when nothing reaches the server but through the proxy), a number of
 * hops, or the proxies' addresses and CIDR ranges.
 */
export const trustProxy = () =>
  z.preprocess(
    fromString((s) => (s === '' || FALSE.has(s.toLowerCase()) ? false : TRUE.has(s.toLowerCase()) && s !== '1' ? true : /^\d+$/.test(s) ? Number(s) : splitList(s))),
    z.union([
      z.boolean(),
      z.number().int().min(1).max(32),
      z.array(z.string().refine(isCidr, 'expected true, false, a number of proxy hops, or the proxies\' addresses / CIDR ranges (10.0.0.0/8,127.0.0.1)')).min(1),
    ]),
  );
