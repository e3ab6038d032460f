import { describe, expect, it } from 'vitest';
import { cacheable, DEFAULT_REQUEST_POLICY, refusedBy } from './policy.js';

const facts = { pageHost: 'site.example', method: 'GET', made: 0 };

describe('refusedBy', () => {
  it.each([
    ['the page\'s own script', 'https://site.example/app.js', 'script', null],
    ['the page\'s data', 'https://site.example/data/1.json', 'fetch', null],
    ['an image', 'https://site.example/a.png', 'image', 'resource-type:image'],
    ['a font', 'https://site.example/a.woff2', 'font', 'resource-type:font'],
    ['a video', 'https://site.example/a.mp4', 'media', 'resource-type:media'],
    ['another host\'s script', 'https://cdn.example/lib.js', 'script', 'other-host'],
    ['the same name on another port', 'https://site.example:8443/app.js', 'script', 'other-host'],
    ['a websocket', 'wss://site.example/live', 'websocket', 'scheme:wss'],
    ['an event stream', 'https://site.example/events', 'eventsource', 'resource-type:eventsource'],
    ['a file URL', 'file:///etc/passwd', 'document', 'scheme:file'],
  ])('%s', (_name, url, resourceType, reason) => {
    expect(refusedBy(DEFAULT_REQUEST_POLICY, { ...facts, url, resourceType })).toBe(reason);
  });

  it('refuses anything but GET and HEAD', () => {
    expect(refusedBy(DEFAULT_REQUEST_POLICY, { ...facts, url: 'https://site.example/like', resourceType: 'fetch', method: 'POST' })).toBe('method:POST');
  });

  it('lets listed hosts, or every host, through when told', () => {
    const cdn = { ...facts, url: 'https://cdn.example/lib.js', resourceType: 'script' };
    expect(refusedBy({ ...DEFAULT_REQUEST_POLICY, allowHosts: ['cdn.example'] }, cdn)).toBeNull();
    expect(refusedBy({ ...DEFAULT_REQUEST_POLICY, allowOtherHosts: true }, cdn)).toBeNull();
  });

  it('caps the requests of one page', () => {
    const request = { ...facts, url: 'https://site.example/poll', resourceType: 'xhr' };
    expect(refusedBy({ ...DEFAULT_REQUEST_POLICY, maxRequestsPerPage: 5 }, { ...request, made: 4 })).toBeNull();
    expect(refusedBy({ ...DEFAULT_REQUEST_POLICY, maxRequestsPerPage: 5 }, { ...request, made: 5 })).toBe('request-limit');
  });
});

describe('cacheable', () => {
  it.each([
    ['script', 200, {}, true],
    ['stylesheet', 200, { 'cache-control': 'max-age=60' }, true],
    ['script', 200, { 'cache-control': 'no-store' }, false],
    ['script', 200, { 'cache-control': 'private, max-age=0' }, false],
    ['script', 404, {}, false],
    ['fetch', 200, {}, false],
  ])('%s %d %j → %s', (type, status, headers, expected) => {
    expect(cacheable(DEFAULT_REQUEST_POLICY, type, status, headers)).toBe(expected);
  });
});
