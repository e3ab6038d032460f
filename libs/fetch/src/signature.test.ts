import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { verify } from 'web-bot-auth';
import { verifierFromJWK } from 'web-bot-auth/crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, makeFetcher, startServer } from './servers.test-helpers.js';
import { signatureDirectory, signingKeyFromPem, webBotAuthHeaders } from './signature.js';

afterEach(closeAll);

/**
 * trawl's Web Bot Auth signatures checked by an independent verifier: `web-bot-auth` (the
 * reference implementation of the draft on npm), which rebuilds the RFC 9421 signature base from
 * the request it is given and checks the Ed25519 signature with the public key from trawl's
 * directory, plus the profile's rules (tag, created/expires, keyid).
 */
const newKey = () => signingKeyFromPem(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string);
const nonce = () => randomBytes(64).toString('base64');
const verifierOf = (key: ReturnType<typeof newKey>) => verifierFromJWK(signatureDirectory([key]).keys[0] as Parameters<typeof verifierFromJWK>[0]);

describe('webBotAuthHeaders', () => {
  it('signs @authority and Signature-Agent with created, expires, keyid, alg, nonce and tag; an independent verifier accepts it', async () => {
    const key = newKey();
    const url = 'https://shop.example/search?q=1';
    const headers = webBotAuthHeaders('GET', url, {}, key, Date.now(), { agent: 'https://crawler.example', nonce: nonce() });
    expect(headers['signature-agent']).toBe('"https://crawler.example"');
    expect(headers['signature-input']).toMatch(
      /^sig1=\("@authority" "signature-agent"\);created=\d+;expires=\d+;keyid="[\w-]{43}";alg="ed25519";nonce="[\w+/=]+";tag="web-bot-auth"$/,
    );
    await expect(verify(new Request(url, { headers }), await verifierOf(key))).resolves.toBeUndefined();
  });

  it('covers only @authority when no directory is named', async () => {
    const key = newKey();
    const headers = webBotAuthHeaders('GET', 'http://127.0.0.1:8080/x', {}, key, Date.now());
    expect(headers).not.toHaveProperty('signature-agent');
    expect(headers['signature-input']).toMatch(/^sig1=\("@authority"\);/);
    await expect(verify(new Request('http://127.0.0.1:8080/x', { headers }), await verifierOf(key))).resolves.toBeUndefined();
  });

  it('is refused for another authority, another key, a changed Signature-Agent or after it expires', async () => {
    const key = newKey();
    const now = Date.now();
    const headers = webBotAuthHeaders('GET', 'https://a.example/', {}, key, now, { agent: 'https://crawler.example', nonce: nonce() });
    const verifier = await verifierOf(key);
    await expect(verify(new Request('https://b.example/', { headers }), verifier)).rejects.toThrow();
    await expect(verify(new Request('https://a.example/', { headers }), await verifierOf(newKey()))).rejects.toThrow();
    await expect(verify(new Request('https://a.example/', { headers: { ...headers, 'signature-agent': '"https://evil.example"' } }), verifier)).rejects.toThrow();
    const old = webBotAuthHeaders('GET', 'https://a.example/', {}, key, now - 120_000, { nonce: nonce() });
    await expect(verify(new Request('https://a.example/', { headers: old }), verifier)).rejects.toThrow(/expired/);
  });

  it('the keyid is the key\'s RFC 7638 thumbprint and the directory serves its public half only', () => {
    const key = newKey();
    const directory = signatureDirectory([key]);
    expect(directory).toEqual({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: key.jwk.x }] });
    expect(JSON.stringify(directory)).not.toMatch(/"d"/);
    expect(key.keyid).toMatch(/^[\w-]{43}$/);
  });

  it('refuses a key that is not Ed25519, or not a key', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    expect(() => signingKeyFromPem(rsa)).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => signingKeyFromPem('not a key')).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
  });
});

describe('the fetcher signs each request through its signRequest option', () => {
  it('adds the signature to what it sends; the server\'s copy of the request verifies', async () => {
    const key = newKey();
    const server = await startServer((_req, res) => res.end('ok'));
    const fetcher = makeFetcher({ signRequest: (method, url, headers) => webBotAuthHeaders(method, url, headers, key, Date.now(), { agent: 'https://crawler.example', nonce: nonce() }) });
    await fetcher.fetch(`${server.origin}/page?x=1`);
    await fetcher.fetchRobots(`${server.origin}/robots.txt`);
    expect(server.requests).toHaveLength(2);
    for (const received of server.requests) {
      const headers = Object.fromEntries(Object.entries(received.headers).map(([name, value]) => [name, String(value)]));
      await expect(verify(new Request(`${server.origin}${received.url}`, { headers }), await verifierOf(key))).resolves.toBeUndefined();
    }
  });
});
