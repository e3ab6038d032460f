import { createHash } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a Redis server that counts what clients send: every data
 * chunk read from a client socket is one round trip (a client writes a command, or a whole
 * pipeline, in one write and waits for the reply), and the RESP commands inside it are parsed to
 * say which commands, and which scripts (EVALSHA by SHA-1), make up each round trip.
 *
 * Caveat: TCP does not keep write boundaries. Two writes that reach the proxy before it reads
 * are counted as one chunk (under-counting under load), and a write larger than a socket read
 * (a push of many URLs, over 64 KiB) as several (over-counting). Both are rare at these sizes;
 * the counts are round trips as Redis would see them to within that.
 */
export interface ConnectionStats {
  /** CLIENT SETNAME's name, if the client set one. */
  name: string | null;
  /** The client issued a blocking command (BZPOPMIN, BRPOPLPUSH, XREAD BLOCK…). */
  blocking: boolean;
  chunks: number;
  commands: number;
  /** Round trips by the first command of the chunk (a script call: `EVALSHA <script>`). */
  chunksByLead: Map<string, number>;
  /** Commands sent, by name (a script call: `EVALSHA <script>`). */
  commandsByName: Map<string, number>;
}

const BLOCKING = new Set(['BZPOPMIN', 'BZPOPMAX', 'BRPOPLPUSH', 'BLMOVE', 'BLPOP', 'BRPOP', 'BZMPOP', 'BLMPOP', 'WAIT']);

/** Reads RESP commands (arrays of bulk strings, or inline) out of a client's byte stream. */
class CommandReader {
  private pending: Buffer | null = null;

  /** Feeds a chunk; returns the commands it completed, each as its first two arguments (more are not needed). */
  feed(chunk: Buffer): string[][] {
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    const commands: string[][] = [];
    let pos = 0;
    while (pos < buf.length) {
      const parsed = parseCommand(buf, pos);
      if (!parsed) break;
      commands.push(parsed.args);
      pos = parsed.end;
    }
    this.pending = pos < buf.length ? Buffer.from(buf.subarray(pos)) : null;
    return commands;
  }
}

function readLine(buf: Buffer, pos: number): { line: string; next: number } | null {
  const end = buf.indexOf('\r\n', pos, 'latin1');
  if (end < 0) return null;
  return { line: buf.toString('latin1', pos, end), next: end + 2 };
}

function parseCommand(buf: Buffer, pos: number): { args: string[]; end: number } | null {
  if (buf[pos] !== 0x2a /* '*' */) {
    const inline = readLine(buf, pos);
    if (!inline) return null;
    return { args: inline.line.trim().split(/\s+/).slice(0, 2), end: inline.next };
  }
  const header = readLine(buf, pos + 1);
  if (!header) return null;
  const count = Number(header.line);
  let at = header.next;
  const args: string[] = [];
  for (let i = 0; i < count; i += 1) {
    if (at >= buf.length || buf[at] !== 0x24 /* '$' */) return null;
    const len = readLine(buf, at + 1);
    if (!len) return null;
    const size = Number(len.line);
    const end = len.next + size + 2;
    if (end > buf.length) return null;
    // The name, the script (EVALSHA's SHA-1, or EVAL's body, hashed), CLIENT's sub-command and argument.
    if (i < 3) {
      const arg = i === 1 && args[0] === 'EVAL' ? createHash('sha1').update(buf.subarray(len.next, len.next + size)).digest('hex') : buf.toString('latin1', len.next, Math.min(len.next + size, len.next + 200));
      args.push(i === 0 ? arg.toUpperCase() : arg);
    }
    at = end;
  }
  return { args, end: at };
}

export class CountingRedisProxy {
  readonly connections: ConnectionStats[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    /** Names scripts by their SHA-1 (unknown ones show as the SHA's first 8 hex digits). */
    private readonly scriptName: (sha: string) => string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(target: { host: string; port: number }, scriptName: (sha: string) => string): Promise<CountingRedisProxy> {
    let proxy: CountingRedisProxy | null = null;
    const server = createServer((client) => proxy?.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new CountingRedisProxy(server, (server.address() as { port: number }).port, scriptName);
    return proxy;
  }

  /** Forgets every count (connections stay open and go on counting from zero). */
  reset(): void {
    for (const c of this.connections) {
      c.chunks = 0;
      c.commands = 0;
      c.chunksByLead.clear();
      c.commandsByName.clear();
    }
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    client.setNoDelay(true);
    const upstream = createConnection(target);
    upstream.setNoDelay(true);
    this.sockets.add(client).add(upstream);
    const stats: ConnectionStats = { name: null, blocking: false, chunks: 0, commands: 0, chunksByLead: new Map(), commandsByName: new Map() };
    this.connections.push(stats);
    const reader = new CommandReader();
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      stats.chunks += 1;
      const commands = reader.feed(chunk);
      commands.forEach((args, i) => {
        const name = this.label(args);
        if (i === 0) stats.chunksByLead.set(name, (stats.chunksByLead.get(name) ?? 0) + 1);
        stats.commandsByName.set(name, (stats.commandsByName.get(name) ?? 0) + 1);
        stats.commands += 1;
        if (BLOCKING.has(args[0] ?? '') || (args[0] === 'XREAD' && /^block$/i.test(args[1] ?? ''))) stats.blocking = true;
        if (args[0] === 'CLIENT' && /^setname$/i.test(args[1] ?? '')) stats.name = args[2] ?? null;
      });
      // A chunk that only continues a command begun in an earlier one still is a write.
      if (commands.length === 0) stats.chunksByLead.set('(continued)', (stats.chunksByLead.get('(continued)') ?? 0) + 1);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  }

  private label(args: string[]): string {
    const [name = '', first = ''] = args;
    if (name === 'EVALSHA' || name === 'EVAL') return `EVALSHA ${this.scriptName(first.toLowerCase())}`;
    return name;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
