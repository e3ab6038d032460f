import { CountingRedisProxy } from './redis-proxy.js';

/**
 * The counting proxy in a process of its own (forked by the cost benchmark), so that the
 * benchmark's synthetic web, busy serving the crawl, never delays its reads: a late read merges
 * writes. Messages: `reset` → `{ reset: true }`; `stats` → `{ connections }`.
 */
const [host = '127.0.0.1', port = '6379'] = process.argv.slice(2);
const names = new Map<string, string>(JSON.parse(process.env.COST_SCRIPT_NAMES ?? '[]') as [string, string][]);
const proxy = await CountingRedisProxy.start({ host, port: Number(port) }, (sha) => names.get(sha) ?? `unknown ${sha.slice(0, 8)}`);
process.on('message', (message: string) => {
  if (message === 'reset') {
    proxy.reset();
    process.send?.({ reset: true });
  } else if (message === 'stats') {
    const connections = proxy.connections.map((c) => ({ ...c, chunksByLead: [...c.chunksByLead], commandsByName: [...c.commandsByName] }));
    process.send?.({ connections });
  } else if (message === 'stop') {
    void proxy.stop().then(() => process.exit(0));
  }
});
process.send?.({ port: proxy.port });
