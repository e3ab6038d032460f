// The synthetic web in a process of its own, for ./testweb.ts: it starts the web from the JSON
// options in argv[2] (`profile: 'realistic'` for the realistic profile, at no latency: the
// measurement is CPU, not time), sends its origins, then its CPU use on request.
import { REALISTIC_PROFILE, TestWeb, type TestWebOptions } from '@trawl/testweb';

const options = JSON.parse(process.argv[2] ?? '{}') as Omit<TestWebOptions, 'profile'> & { profile?: 'realistic' };
const profile = options.profile === 'realistic' ? { ...REALISTIC_PROFILE, hostLatencyMs: { median: 0, p90: 0, max: 0 } } : undefined;
const started = process.cpuUsage();
const web = await TestWeb.start({ ...options, profile });
const startCpu = process.cpuUsage(started);
const urls = [...web.groundTruth(web.rootUrls())];
process.send?.({ urls, startCpuMs: (startCpu.user + startCpu.system) / 1000 });
let from = process.cpuUsage();
process.on('message', (message: string) => {
  if (message === 'mark') {
    from = process.cpuUsage();
    process.send?.({ marked: true });
  } else if (message === 'cpu') {
    const used = process.cpuUsage(from);
    process.send?.({ cpuMs: (used.user + used.system) / 1000, requests: web.log.length, bytes: web.log.reduce((sum, e) => sum + e.bytes, 0) });
  } else if (message === 'stop') {
    void web.stop().then(() => process.exit(0));
  }
});
