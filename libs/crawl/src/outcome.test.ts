import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode } from '@trawl/core';
import { Fetcher } from '@trawl/fetch';
import { attemptsFor, DEFAULT_RETRY, type FetchOutcomeKind, outcomeOfError, outcomeOfStatus, responseTimeMs } from '@trawl/politeness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The politeness model reads the fetcher's errors (code, action, timeout phase): this checks it
 * against errors the real fetcher raises, on a local server that misbehaves per path.
 */
let server: Server;
let origin: string;
const fetcher = new Fetcher({
  userAgent: 'trawl-test',
  timeouts: { connectMs: 1000, firstByteMs: 300, idleMs: 1000, totalMs: 600 },
  maxBodyBytes: 1024 * 1024,
  ssrf: { allowNetworks: ['127.0.0.0/8'] },
});

beforeAll(async () => {
  server = createServer((req, res) => {
    switch (req.url) {
      case '/tarpit': {
        // Headers at once, then a byte every 100 ms: only the total deadline ends it.
        res.writeHead(200, { 'content-type': 'text/html' });
        const timer = setInterval(() => res.write('.'), 100);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/silent':
        return; // never answers: the first-byte timeout ends it
      case '/reset':
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': '1000' });
        res.write('partial');
        setTimeout(() => req.socket.destroy(), 20);
        return;
      case '/slow-500':
        setTimeout(() => {
          res.writeHead(500, { 'content-type': 'text/html' });
          res.end('broken');
        }, 80);
        return;
      default:
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<p>ok</p>');
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  fetcher.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function failureOf(url: string): Promise<unknown> {
  try {
    await fetcher.fetch(url);
  } catch (error) {
    return error;
  }
  throw new Error(`${url} did not fail`);
}

describe('what a real fetch failure says about its host', () => {
  it.each<[string, () => string, FetchOutcomeKind, string]>([
    ['a tarpit that hits the total deadline: the URL\'s', () => `${origin}/tarpit`, 'url-error', ErrorCode.FetchTimeout],
    ['no response headers in time: the URL\'s', () => `${origin}/silent`, 'url-error', ErrorCode.FetchTimeout],
    ['a connection reset mid-body: the host\'s', () => `${origin}/reset`, 'error', ErrorCode.FetchNetwork],
    ['connection refused: the host\'s', () => 'http://127.0.0.1:1/', 'error', ErrorCode.FetchNetwork],
  ])('%s', async (_name, url, expected, code) => {
    const error = await failureOf(url());
    expect(error).toMatchObject({ code });
    expect(outcomeOfError(error)).toBe(expected);
  });

  it('a timeout gets the timeout budget of tries', async () => {
    const error = (await failureOf(`${origin}/tarpit`)) as { code: string };
    expect(attemptsFor(error.code, DEFAULT_RETRY)).toBe(DEFAULT_RETRY.timeoutAttempts);
  });

  it('a 500 is the URL\'s; its response time runs to the headers', async () => {
    const response = await fetcher.fetch(`${origin}/slow-500`);
    expect(outcomeOfStatus(response.status)).toBe('url-error');
    expect(responseTimeMs(response)).toBeGreaterThanOrEqual(70);
    expect(responseTimeMs(response)).toBeLessThanOrEqual(response.endedAt - response.startedAt);
  });
});
