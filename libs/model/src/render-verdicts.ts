import { bindScripts, loadScripts, type Redis, type ScriptCaller } from '@trawl/redis';
import { freshHostState, type HostRenderState, type HostVerdict, type HostVerdictStore, type SampleRules, standingState } from '@trawl/render';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['claimSample-1', 'recordSample-1', 'releaseSample-1']);

type TallyReply = [string, number, number, number, string, string, number, number, number];

const VERDICTS: readonly HostVerdict[] = ['sampling', 'render', 'plain'];

const stateOf = (reply: TallyReply): HostRenderState => ({
  verdict: VERDICTS.find((v) => v === reply[0]) ?? 'sampling',
  samples: Number(reply[1]),
  pending: Number(reply[2]),
  gains: Number(reply[3]),
  decidedAt: reply[4] === '' ? null : Number(reply[4]),
  claimedAt: reply[5] === '' ? null : Number(reply[5]),
  passed: Number(reply[6]),
  lastGained: Number(reply[7]) === 1,
});

/**
 * The render learner's per-host tallies and verdicts in Redis (`<namespace>:render:learn:<host>`),
 * shared by every worker of the crawl and kept across their restarts: a host is sampled at most
 * `sampleSize` times per review, not per process. Each change is one script (`claimSample`,
 * `recordSample`, `releaseSample`), so workers sampling one host at once hand out one sample at a
 * time between them. A tally untouched for `reviewAfterMs` plus `claimTtlMs`
 * expires (its verdict was due for review anyway). `RenderLearner` keeps what it last read in
 * memory, so a host with a verdict costs no round trip per page.
 */
export class RedisHostVerdicts implements HostVerdictStore {
  private readonly scripts: Record<'claimSample' | 'recordSample' | 'releaseSample', ScriptCaller>;

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
  ) {
    this.scripts = bindScripts(redis, SCRIPTS);
  }

  keyOf(host: string): string {
    return `${this.namespace}:render:learn:${host}`;
  }

  async read(host: string, rules: SampleRules, now: number): Promise<HostRenderState> {
    const fields = await this.redis.hmget(this.keyOf(host), 'verdict', 'samples', 'pending', 'gains', 'decidedAt', 'claimedAt', 'passed', 'lastGained');
    if (fields[0] === null) return freshHostState();
    return standingState(stateOf(fields.map((f) => f ?? '') as unknown as TallyReply), rules, now);
  }

  async claim(host: string, rules: SampleRules, now: number): Promise<{ state: HostRenderState; granted: boolean }> {
    const reply = (await this.scripts.claimSample([this.keyOf(host)], argsOf(rules, now))) as TallyReply;
    return { state: stateOf(reply), granted: Number(reply[8]) === 1 };
  }

  async record(host: string, gained: boolean, rules: SampleRules, now: number): Promise<HostRenderState> {
    return stateOf((await this.scripts.recordSample([this.keyOf(host)], [...argsOf(rules, now), gained ? 1 : 0])) as TallyReply);
  }

  async release(host: string, rules: SampleRules, now: number): Promise<HostRenderState> {
    return stateOf((await this.scripts.releaseSample([this.keyOf(host)], argsOf(rules, now))) as TallyReply);
  }
}

const argsOf = (rules: SampleRules, now: number): (string | number)[] => [
  now,
  rules.sampleSize,
  rules.reviewAfterMs,
  rules.claimTtlMs,
  rules.reviewAfterMs + rules.claimTtlMs,
  rules.sampleSpacing,
  rules.minGainShare,
];
