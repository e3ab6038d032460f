// The test web for this lib's suites: real node:http / TCP servers on loopback, port 0, with a
// request log. Each test file calls `afterEach(closeAll)`. Not part of the lib's build.
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { isTrawlError, type TrawlError } from '@trawl/core';
import { Fetcher } from './fetcher.js';
import type { FetcherOptions } from './options.js';

export interface LoggedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface TestServer {
  origin: string;
  host: string;
  port: number;
  requests: LoggedRequest[];
  connections: number;
  /** Body bytes the handler managed to hand to the socket (see `countWrites`). */
  bytesWritten: number;
  /** Resolves when the server sees a response socket close before the response finished. */
  aborted: Promise<void>;
  server: Server;
}

export interface TestTcpServer {
  host: string;
  port: number;
  connections: number;
  /** Bytes received from clients, over all connections. */
  bytesReceived: number;
}

const servers: Array<Server | TcpServer> = [];
const fetchers: Fetcher[] = [];

/** Closes every server and fetcher the test started. */
export async function closeAll(): Promise<void> {
  for (const fetcher of fetchers.splice(0)) fetcher.close();
  await Promise.all(
    servers.splice(0).map(async (server) => {
      if ('closeAllConnections' in server) server.closeAllConnections();
      server.close();
      if (server.listening) await once(server, 'close');
    }),
  );
}

export async function startServer(handler: RequestListener, options: { host?: string; port?: number } = {}): Promise<TestServer> {
  const host = options.host ?? '127.0.0.1';
  let onAborted: () => void = () => undefined;
  const server = createServer((req, res) => {
    state.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.on('close', () => {
      if (!res.writableFinished) onAborted();
    });
    handler(req, res);
  });
  const state: TestServer = {
    origin: '',
    host,
    port: 0,
    requests: [],
    connections: 0,
    bytesWritten: 0,
    aborted: new Promise((resolve) => (onAborted = resolve)),
    server,
  };
  server.on('connection', (socket: Socket) => {
    state.connections++;
    socket.on('error', () => undefined); // a client hanging up mid-response is the point of some tests
  });
  servers.push(server);
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  state.port = (server.address() as AddressInfo).port;
  state.origin = `http://${host.includes(':') ? `[${host}]` : host}:${state.port}`;
  return state;
}

/** A raw TCP server: `onSocket` decides what (if anything) the peer gets. */
export async function startTcpServer(onSocket: (socket: Socket) => void, host = '127.0.0.1'): Promise<TestTcpServer> {
  const state: TestTcpServer = { host, port: 0, connections: 0, bytesReceived: 0 };
  const server = createTcpServer((socket) => {
    state.connections++;
    socket.on('data', (chunk: Buffer) => (state.bytesReceived += chunk.length));
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  servers.push(server);
  server.listen(0, host);
  await once(server, 'listening');
  state.port = (server.address() as AddressInfo).port;
  return state;
}

/**
 * Writes `chunks` copies of `chunk` with back-pressure (so a body of any size costs one chunk of
 * memory), then `tail`, then ends; stops when the client hangs up. Counts into `state.bytesWritten`.
 */
export function pump(
  res: NodeJS.WritableStream & { destroyed?: boolean },
  chunk: Buffer,
  chunks: number,
  state?: TestServer,
  tail?: Buffer,
): void {
  let sent = 0;
  const next = (): void => {
    while (sent < chunks) {
      if (res.destroyed === true) return;
      sent++;
      if (state !== undefined) state.bytesWritten += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', next);
        return;
      }
    }
    if (tail === undefined) res.end();
    else res.end(tail);
  };
  next();
}

export const baseOptions: FetcherOptions = {
  userAgent: 'trawl-test/1.0 (+https://example.invalid/bot)',
  timeouts: { connectMs: 2_000, firstByteMs: 5_000, idleMs: 5_000, totalMs: 15_000 },
  maxBodyBytes: 10 * 1024 * 1024,
  // The test web lives on loopback, which the SSRF guard refuses by default.
  ssrf: { allowNetworks: ['127.0.0.0/8'] },
};

export function makeFetcher(overrides: Partial<FetcherOptions> = {}): Fetcher {
  const fetcher = new Fetcher({ ...baseOptions, ...overrides });
  fetchers.push(fetcher);
  return fetcher;
}

export async function fetchError(promise: Promise<unknown>): Promise<TrawlError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isTrawlError(error)) throw new Error(`expected a TrawlError, got ${String(error)}`);
  return error;
}

export const causeCode = (error: TrawlError): unknown => (error.cause as { code?: unknown } | undefined)?.code;

/** Measurements of the hostile cases, printed with TRAWL_FETCH_REPORT=1. */
export const measurements: Array<Record<string, unknown>> = [];
