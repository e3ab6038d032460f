import { checkServerIdentity } from 'node:tls';
import { Options } from 'got';

/**
 * got 14.6.6 builds the options it hands to `http.request` (`Options#createNativeRequestOptions`,
 * once per request) as one object literal that opens with two spreads (`...cacheOptions,
 * ...unixOptions`) and then lists 34 properties. On Node 20's V8 an object built that way does
 * not reuse a cached shape: every call walks a new chain of maps, and the garbage collector
 * pays for them. In a loop that alone costs ~0.5 ms per call; in the fetcher it was ~15 % of the
 * CPU of a keep-alive GET of a 30 KB page (bench/src/fetch-cpu.ts). This builds the same object
 * with the literal first and the spreads after (their keys never collide with the literal's),
 * for the plain HTTP/1.1 requests the fetcher makes; HTTP/2 and UNIX-socket requests, which the
 * fetcher never makes, keep got's own code. got-native-options.test.ts checks that both give the
 * same options for the fetcher's requests, so a got upgrade that changes them fails there.
 */
type NativeRequestOptions = ReturnType<Options['createNativeRequestOptions']>;

export const gotCreateNativeRequestOptions: (this: Options) => NativeRequestOptions = Options.prototype.createNativeRequestOptions;

export function createNativeRequestOptions(this: Options): NativeRequestOptions {
  if (this.http2 || this.enableUnixSockets) return gotCreateNativeRequestOptions.call(this);
  const { https, dnsCache } = this;
  const native = {
    ALPNProtocols: https.alpnProtocols,
    ca: https.certificateAuthority,
    cert: https.certificate,
    key: https.key,
    passphrase: https.passphrase,
    pfx: https.pfx,
    rejectUnauthorized: https.rejectUnauthorized,
    checkServerIdentity: https.checkServerIdentity ?? checkServerIdentity,
    servername: https.serverName,
    ciphers: https.ciphers,
    honorCipherOrder: https.honorCipherOrder,
    minVersion: https.minVersion,
    maxVersion: https.maxVersion,
    sigalgs: https.signatureAlgorithms,
    sessionTimeout: https.tlsSessionLifetime,
    dhparam: https.dhparam,
    ecdhCurve: https.ecdhCurve,
    crl: https.certificateRevocationLists,
    secureOptions: https.secureOptions,
    lookup: this.dnsLookup ?? (typeof dnsCache === 'object' ? dnsCache.lookup : undefined),
    family: this.dnsLookupIpVersion,
    agent: (this.url as URL).protocol === 'https:' ? this.agent.https : this.agent.http,
    setHost: this.setHost,
    method: this.method,
    maxHeaderSize: this.maxHeaderSize,
    localAddress: this.localAddress,
    headers: this.headers,
    createConnection: this.createConnection,
    timeout: undefined,
    h2session: this.h2session,
  };
  return Object.assign(native, this.cacheOptions) as NativeRequestOptions;
}

/** Puts `createNativeRequestOptions` in place of got's own (once per process; idempotent). */
export function useCreateNativeRequestOptions(): void {
  Options.prototype.createNativeRequestOptions = createNativeRequestOptions;
}
