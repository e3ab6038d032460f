import { writeFileSync } from 'node:fs';
import { Socket } from 'node:net';

/**
 * Preloaded into the crawler by the cost benchmark (`--import`): counts the crawler's own writes
 * to Redis (every `socket.write` on a connection to port COST_COUNT_WRITES_PORT) and writes the
 * count to COST_COUNT_WRITES_FILE as the process exits. ioredis writes one command, or one whole
 * pipeline, per call: this is the round-trip count as the client makes them, free of the
 * proxy's caveat (a proxy that reads late sees two writes as one).
 */
const port = Number(process.env.COST_COUNT_WRITES_PORT);
const file = process.env.COST_COUNT_WRITES_FILE;
if (port && file) {
  let writes = 0;
  let bytes = 0;
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
    if (this.remotePort === port) {
      writes += 1;
      const data = args[0];
      bytes += typeof data === 'string' ? Buffer.byteLength(data) : data instanceof Uint8Array ? data.byteLength : 0;
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof Socket.prototype.write;
  process.on('exit', () => writeFileSync(file, JSON.stringify({ writes, bytes })));
}
