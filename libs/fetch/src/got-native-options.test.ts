import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Options } from 'got';
import { describe, expect, it } from 'vitest';
import { createNativeRequestOptions, gotCreateNativeRequestOptions } from './got-native-options.js';
import { makeFetcher } from './servers.test-helpers.js';

const agent = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
const lookup = () => undefined;
/** got's options as the Fetcher sets them (see the constructor's got.extend). */
const fetcherDefaults = new Options({
  agent,
  http2: false,
  decompress: true,
  followRedirect: false,
  retry: { limit: 0 },
  throwHttpErrors: false,
  timeout: { lookup: 1, connect: 1, secureConnect: 1, send: 1, response: 2, socket: 3, request: 4 },
  headers: { 'user-agent': 'trawl-test/1.0', accept: 'text/html', 'accept-encoding': 'gzip, deflate, br' },
  dnsLookup: lookup,
});

describe('createNativeRequestOptions', () => {
  it.each([
    ['http', 'http://example.com/a?b=1', {}],
    ['https', 'https://example.com:8443/a', {}],
    ['extra headers and a signal', 'http://127.0.0.1:8080/', { headers: { 'if-none-match': '"v1"' }, signal: new AbortController().signal }],
    ['TLS settings', 'https://example.com/', { https: { rejectUnauthorized: false, serverName: 'x.example', minVersion: 'TLSv1.2' as const } }],
    ['got\'s DNS cache instead of a lookup', 'http://example.com/', { dnsLookup: undefined, dnsCache: true }],
    ['a local address and an IP family', 'http://example.com/', { localAddress: '127.0.0.1', dnsLookupIpVersion: 4 as const }],
  ])('gives what got gives: %s', (_name, url, extra) => {
    const options = new Options(url, { isStream: true, ...extra }, fetcherDefaults);
    expect(createNativeRequestOptions.call(options)).toStrictEqual(gotCreateNativeRequestOptions.call(options));
  });

  it('leaves HTTP/2 to got', () => {
    const options = new Options('https://example.com/', { http2: true }, fetcherDefaults);
    const ours = createNativeRequestOptions.call(options);
    expect(ours).toStrictEqual(gotCreateNativeRequestOptions.call(options));
    expect(ours.agent).not.toBe(agent.https);
  });
});

it('is what got calls once a Fetcher exists', () => {
  makeFetcher().close();
  expect(Options.prototype.createNativeRequestOptions).toBe(createNativeRequestOptions);
});
