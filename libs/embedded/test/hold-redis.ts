// A parent process for the parent-death tests: starts an embedded redis-server, prints its pid
// and URL as one JSON line, then idles until it is killed.
//   node --conditions=trawl-source --import tsx hold-redis.ts <dir> <auto|setpriv|watchdog>
import type { ParentDeathMethod } from '../src/parent-death.js';
import { startEmbeddedRedis } from '../src/redis.js';

const [dir, method] = process.argv.slice(2) as [string, ParentDeathMethod];
const server = await startEmbeddedRedis({ dir, parentDeath: method });
process.stdout.write(`${JSON.stringify({ pid: server.childPid, url: server.url })}\n`);
setInterval(() => undefined, 60_000);
