import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * A set of API tokens, checked in constant time: the candidate and every token are hashed to
 * 32 bytes and compared with `timingSafeEqual`, all of them every time, so neither a token's
 * length nor which one matched (nor how much of it) shows in the time an answer takes.
 * A token is named in logs and records only by its id (`tok:` + 8 hex digits of its hash).
 */
export class TokenSet {
  private readonly tokens: { hash: Buffer; id: string }[];

  constructor(tokens: readonly string[]) {
    this.tokens = [...new Set(tokens)].filter((t) => t.length > 0).map((t) => ({ hash: digest(t), id: tokenId(t) }));
  }

  get size(): number {
    return this.tokens.length;
  }

  /** The id of the token `candidate` is, or null. */
  verify(candidate: string | undefined | null): string | null {
    const given = digest(candidate ?? '');
    let found: string | null = null;
    for (const token of this.tokens) if (timingSafeEqual(given, token.hash) && candidate) found = token.id;
    return found;
  }

  /** Is `id` still one of the tokens (a session signed in with a token that was since removed is not)? */
  hasId(id: string): boolean {
    return this.tokens.some((t) => t.id === id);
  }
}

/** A token's public name: never the token, never enough of its hash to search for it. */
export const tokenId = (token: string): string => `tok:${digest(token).toString('hex').slice(0, 8)}`;

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match ? (match[1] as string) : null;
}
