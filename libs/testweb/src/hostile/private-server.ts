/**
 * The "private" target: a small server on an address outside the hostile web's allowed range,
 * standing for an intranet service or a cloud metadata endpoint. A redirect points at it; a
 * crawler whose SSRF guard works never connects, so its log stays empty.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import { describeError } from '@trawl/core';
import { TestWebError, TestWebErrorCode } from '../errors.js';
import { closeServers } from '../listen.js';
import type { RequestLogEntry } from '../log.js';
import { requestKey } from '../request-key.js';
import { countBodyBytes } from '../respond.js';
import { sendBody, TEXT } from './site.js';

export interface PrivateServer {
  /** `http://127.0.0.99:PORT` */
  origin: string;
  /** The URL the hostile web redirects to. */
  secretUrl: string;
  /** Every request it got (hostIndex −1). */
  log: RequestLogEntry[];
  stop(): Promise<void>;
}

const hrNow = (): number => performance.timeOrigin + performance.now();

export async function startPrivateServer(address: string, port = 0): Promise<PrivateServer> {
  const log: RequestLogEntry[] = [];
  let hostKey = '';
  const server = http.createServer((req, res) => {
    const entry: RequestLogEntry = {
      host: hostKey,
      hostIndex: -1,
      method: req.method ?? '',
      path: req.url ?? '',
      pageKey: requestKey(req.url ?? ''),
      start: Date.now(),
      startHr: hrNow(),
      end: -1,
      endHr: -1,
      status: 0,
      bytes: 0,
      userAgent: req.headers['user-agent'],
      note: 'private server: an SSRF guard should have refused this',
    };
    log.push(entry);
    if (req.method !== 'HEAD') countBodyBytes(res, entry);
    const finish = (aborted: boolean): void => {
      if (entry.end >= 0) return;
      entry.end = Date.now();
      entry.endHr = hrNow();
      entry.status = res.headersSent ? res.statusCode : 0;
      if (aborted) entry.aborted = true;
    };
    res.once('finish', () => finish(false));
    res.once('close', () => finish(true));
    sendBody(req, res, 200, { 'content-type': TEXT }, 'internal secrets: a crawler must never get here\n');
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: address, port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    throw new TestWebError(TestWebErrorCode.Bind, `private server could not listen on ${address}:${port}: ${describeError(error)}`, error);
  }
  hostKey = `${address}:${(server.address() as AddressInfo).port}`;
  const origin = `http://${hostKey}`;
  let stopped: Promise<void> | null = null;
  return {
    origin,
    secretUrl: `${origin}/secret`,
    log,
    stop: () => (stopped ??= closeServers([server])),
  };
}
