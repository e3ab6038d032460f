/**
 * Web Bot Auth: signing trawl's requests with HTTP Message Signatures (RFC 9421) and an Ed25519
 * key, as the IETF Web Bot Auth drafts (draft-meunier-web-bot-auth-architecture,
 * draft-meunier-http-message-signatures-directory) profile them: the signature covers
 * `@authority` and, when trawl names its key directory, the `Signature-Agent` header; its
 * parameters are `created`, `expires`, `keyid` (the key's JWK thumbprint, RFC 7638), `alg`,
 * `nonce` and `tag="web-bot-auth"`. A site verifies it with the public key from the directory
 * (`signatureDirectory`, served at /.well-known/http-message-signatures-directory).
 *
 * Pure: the time and the nonce come in as arguments (Ed25519 signatures are deterministic).
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';
import { ErrorCode, TrawlError } from '@trawl/core';

export interface SigningKey {
  privateKey: KeyObject;
  /** The public key as a JWK (RFC 8037): what the directory serves. */
  jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
  /** Its JWK SHA-256 thumbprint (RFC 7638), base64url: the signatures' `keyid`. */
  keyid: string;
}

/** Where the key directory lives on the agent's origin. */
export const SIGNATURE_DIRECTORY_PATH = '/.well-known/http-message-signatures-directory';
/** The directory's media type. */
export const SIGNATURE_DIRECTORY_TYPE = 'application/http-message-signatures-directory+json';
/** How long a signature is valid after `created` (the drafts ask for a short window). */
export const SIGNATURE_VALIDITY_S = 60;

/** An Ed25519 private key in PEM (PKCS#8); anything else is a configuration error. */
export function signingKeyFromPem(pem: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (cause) {
    throw new TrawlError(ErrorCode.ConfigInvalid, 'the request-signing key is not a PEM private key', { action: 'fatal', cause });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new TrawlError(ErrorCode.ConfigInvalid, `the request-signing key must be Ed25519, not ${privateKey.asymmetricKeyType ?? 'unknown'}`, { action: 'fatal' });
  }
  const { x } = createPublicKey(privateKey).export({ format: 'jwk' }) as { x: string };
  const jwk = { kty: 'OKP', crv: 'Ed25519', x } as const;
  // RFC 7638 §3: the required members in lexicographic order, no white space.
  const keyid = createHash('sha256').update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x })).digest('base64url');
  return { privateKey, jwk, keyid };
}

export interface SignatureOptions {
  /** The URL of trawl's key directory's origin, sent as `Signature-Agent` and signed; none: not sent. */
  agent?: string | null;
  /** The `nonce` parameter (base64); none: no nonce. */
  nonce?: string;
}

/** An RFC 8941 string: the characters it cannot hold are refused, not escaped into something else. */
function sfString(value: string): string {
  if (!/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(value)) throw new TrawlError(ErrorCode.ConfigInvalid, `not a structured-field string: ${JSON.stringify(value.slice(0, 80))}`, { action: 'fatal' });
  return `"${value}"`;
}

/**
 * The headers that sign one request (RFC 9421 §3.1): `Signature-Input` and `Signature` (label
 * `sig1`), and `Signature-Agent` when `options.agent` is set. `url` is the absolute URL asked;
 * `method` and `headers` are the request's (today's components need neither but the authority).
 */
export function webBotAuthHeaders(
  method: string,
  url: string,
  headers: Readonly<Record<string, unknown>>,
  key: SigningKey,
  now: number,
  options: SignatureOptions = {},
): Record<string, string> {
  void method;
  void headers;
  // RFC 9421 §2.2.3: the target's authority, host lower case and the scheme's default port left out.
  const authority = new URL(url).host;
  const created = Math.floor(now / 1000);
  const agent = options.agent ? sfString(options.agent) : null;
  const components = agent === null ? '("@authority")' : '("@authority" "signature-agent")';
  const params =
    `${components};created=${created};expires=${created + SIGNATURE_VALIDITY_S};keyid=${sfString(key.keyid)};alg="ed25519"` +
    `${options.nonce === undefined ? '' : `;nonce=${sfString(options.nonce)}`};tag="web-bot-auth"`;
  // RFC 9421 §2.5: one line per covered component, then the parameters.
  const base = [`"@authority": ${authority}`, ...(agent === null ? [] : [`"signature-agent": ${agent}`]), `"@signature-params": ${params}`].join('\n');
  const signature = sign(null, Buffer.from(base, 'utf8'), key.privateKey).toString('base64');
  return {
    ...(agent === null ? {} : { 'signature-agent': agent }),
    'signature-input': `sig1=${params}`,
    signature: `sig1=:${signature}:`,
  };
}

/** A request's headers with what `sign` adds (the fetcher's one call, per request it sends). */
export function withSignature<H extends Readonly<Record<string, unknown>>>(
  sign: ((method: string, url: string, headers: H) => Record<string, string>) | undefined,
  url: string,
  headers: H,
): H {
  return sign === undefined ? headers : { ...headers, ...sign('GET', url, headers) };
}

/** The key directory (a JWKS) a site fetches to verify trawl's signatures. */
export function signatureDirectory(keys: readonly SigningKey[]): { keys: SigningKey['jwk'][] } {
  return { keys: keys.map((key) => ({ ...key.jwk })) };
}
