import { createHash } from 'node:crypto';

/** The direct connection, as a member of a tier or a rule's target. */
export const DIRECT = 'none';

export interface ProxyExitOptions {
  /** Letters, digits, _ and -; not `none`. */
  name: string;
  /** `http://`, `https://` or `socks5://`, with credentials if the proxy wants them. Never logged. */
  url: string;
}

export interface ProxyOptions {
  proxies: readonly ProxyExitOptions[];
  /**
   * Ordered groups of proxy names (`none`: the direct connection). A host uses the first tier
   * unless a rule says otherwise. Default: one tier, named `1`, of every proxy.
   */
  tiers?: ReadonlyArray<{ name: string; members: readonly string[] }>;
  /** `domain` (and its subdomains; the longest match wins) uses tier `tier`, or `none`: never proxied. */
  rules?: ReadonlyArray<{ domain: string; tier: string }>;
  /** A host keeps its proxy for this many requests (in this process), then picks again. 0: no limit. */
  sessionRequests?: number;
  /** A host keeps its proxy for this long, then picks again (every process agrees when). 0: no limit. */
  sessionMs?: number;
  /** A failed proxy is out of its tier this long, doubling per consecutive failure. Default 30 s. */
  backoffBaseMs?: number;
  /** Longest time out. Default 10 min. */
  backoffMaxMs?: number;
  /**
   * The tier a host uses before any move up, given the one its rule or the default plans (a
   * rule's pin, `none` or a tier name): return another tier's name to plan differently. A
   * blocked host then moves up from there (`route`'s level). Default: the planned tier.
   */
  tierFor?: (host: string, planned: string) => string;
}

/** Where one request goes: through `exit` (a proxy name, or `none`), chosen from `tier`. */
export type Route =
  | { kind: 'exit'; exit: string; tier: string }
  /** Every member of the tier is out (failed recently): try again at `retryAt`. */
  | { kind: 'unavailable'; tier: string; retryAt: number };

export const DEFAULT_PROXY_BACKOFF_BASE_MS = 30_000;
export const DEFAULT_PROXY_BACKOFF_MAX_MS = 600_000;
/** Hosts whose request-counted session this process remembers (the oldest are forgotten). */
const MAX_SESSIONS = 100_000;
const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** Problems with proxy options, for the Fetcher's validation (never repeating a URL: it may hold a password). */
export function proxyOptionsProblems(options: ProxyOptions): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  for (const [i, proxy] of options.proxies.entries()) {
    if (!NAME.test(proxy.name) || proxy.name === DIRECT) problems.push(`proxies[${i}]: bad name ${JSON.stringify(proxy.name)}`);
    else if (names.has(proxy.name)) problems.push(`proxies[${i}]: the name ${proxy.name} is used twice`);
    names.add(proxy.name);
    let url: URL | null = null;
    try {
      url = new URL(proxy.url);
    } catch {
      problems.push(`proxy ${proxy.name}: not a URL`);
    }
    if (url !== null && !['http:', 'https:', 'socks5:'].includes(url.protocol)) problems.push(`proxy ${proxy.name}: ${url.protocol}// is not supported (http, https, socks5)`);
  }
  const tiers = tiersOf(options);
  for (const tier of tiers) {
    if (tier.members.length === 0) problems.push(`tier ${tier.name} has no members`);
    for (const member of tier.members) if (member !== DIRECT && !names.has(member)) problems.push(`tier ${tier.name}: no proxy ${member}`);
  }
  for (const rule of options.rules ?? []) {
    if (rule.tier !== DIRECT && !tiers.some((tier) => tier.name === rule.tier)) problems.push(`rule ${rule.domain}: no tier ${rule.tier}`);
  }
  for (const [name, value] of [['sessionRequests', options.sessionRequests], ['sessionMs', options.sessionMs], ['backoffBaseMs', options.backoffBaseMs], ['backoffMaxMs', options.backoffMaxMs]] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) problems.push(`proxies.${name} must be an integer >= 0, got ${value}`);
  }
  return problems;
}

function tiersOf(options: ProxyOptions): ReadonlyArray<{ name: string; members: readonly string[] }> {
  if (options.tiers !== undefined && options.tiers.length > 0) return options.tiers;
  return options.proxies.length > 0 ? [{ name: '1', members: options.proxies.map((proxy) => proxy.name) }] : [];
}

/** A 48-bit score of `text`: rendezvous hashing's weight of one (exit, host session) pair. */
function score(text: string): number {
  const digest = createHash('sha1').update(text).digest();
  return digest.readUIntBE(0, 6);
}

/**
 * Which exit (proxy or direct) each request of a host goes through. Pure but for its memory of
 * failed proxies and request-counted sessions; time comes in as `now`.
 *
 * Sticky: a host's tier members are ranked by rendezvous (highest-random-weight) hashing on the
 * host and its session number, so a host sees one address for a whole session, every worker
 * process picks the same one for it, and when a proxy is out only its own hosts move (each to
 * its next-ranked member), coming back when it does.
 */
export class ProxyRouter {
  private readonly tiers: Map<string, readonly string[]>;
  /** Tier names in their order: a blocked host moves along it. */
  private readonly order: readonly string[];
  private readonly firstTier: string;
  private readonly rules: ReadonlyArray<{ domain: string; tier: string }>;
  private readonly sessionRequests: number;
  private readonly sessionMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly hook: (host: string, planned: string) => string;
  /** Proxies out of their tier: consecutive failures and until when. */
  private readonly out = new Map<string, { failures: number; until: number }>();
  /** Per host: requests in its current request-counted session, and that session's number. */
  private readonly sessions = new Map<string, { requests: number; session: number }>();

  constructor(options: ProxyOptions) {
    const tiers = tiersOf(options);
    this.tiers = new Map(tiers.map((tier) => [tier.name, [...tier.members]]));
    this.order = tiers.map((tier) => tier.name);
    this.firstTier = tiers[0]?.name ?? DIRECT;
    // Longest domain first: the most specific rule wins.
    this.rules = [...(options.rules ?? [])].sort((a, b) => b.domain.length - a.domain.length);
    this.sessionRequests = options.sessionRequests ?? 0;
    this.sessionMs = options.sessionMs ?? 0;
    this.backoffBaseMs = options.backoffBaseMs ?? DEFAULT_PROXY_BACKOFF_BASE_MS;
    this.backoffMaxMs = Math.max(this.backoffBaseMs, options.backoffMaxMs ?? DEFAULT_PROXY_BACKOFF_MAX_MS);
    this.hook = options.tierFor ?? ((_host, planned) => planned);
  }

  /**
   * The tier a host's requests use (`none`: direct) when it has been moved `level` tiers up from
   * its planned one (its rule's, else the first; through the `tierFor` hook), in the order of the
   * tiers. Past the last tier, the last. A host a rule keeps off proxies (`none`) stays direct.
   */
  tierFor(host: string, level = 0): string {
    const planned = this.plannedTier(host);
    if (level <= 0 || planned === DIRECT) return planned;
    const index = this.order.indexOf(planned);
    return this.order[Math.min(this.order.length - 1, index + level)] ?? planned;
  }

  /** Whether a host moved `level` tiers up has a tier above that one to move to (a blocked host does). */
  canEscalate(host: string, level = 0): boolean {
    const planned = this.plannedTier(host);
    if (planned === DIRECT) return false;
    return this.order.indexOf(planned) + Math.max(0, level) < this.order.length - 1;
  }

  private plannedTier(host: string): string {
    const name = host.toLowerCase();
    const rule = this.rules.find((r) => name === r.domain || name.endsWith(`.${r.domain}`));
    const planned = rule?.tier ?? this.firstTier;
    const chosen = this.hook(name, planned);
    return chosen === DIRECT || this.tiers.has(chosen) ? chosen : planned;
  }

  /**
   * The exit for one request to `host`, moved `level` tiers up from its planned one, skipping
   * proxies out of their tier and those in `avoid` (the ones this request has already failed
   * through). Counts the request into the host's session.
   */
  route(host: string, now: number, avoid: ReadonlySet<string> = new Set(), level = 0): Route {
    const tier = this.tierFor(host, level);
    if (tier === DIRECT) return { kind: 'exit', exit: DIRECT, tier };
    const members = this.tiers.get(tier) ?? [];
    const key = `${host.toLowerCase()}#${this.sessionOf(host.toLowerCase(), now, avoid.size === 0)}`;
    let best: string | null = null;
    let bestScore = -1;
    let retryAt = Number.POSITIVE_INFINITY;
    for (const member of members) {
      const down = this.out.get(member);
      if (down !== undefined && down.until > now) {
        retryAt = Math.min(retryAt, down.until);
        continue;
      }
      if (avoid.has(member)) continue;
      const s = score(`${member}\n${key}`);
      if (s > bestScore) {
        best = member;
        bestScore = s;
      }
    }
    if (best !== null) return { kind: 'exit', exit: best, tier };
    return { kind: 'unavailable', tier, retryAt: Number.isFinite(retryAt) ? retryAt : now + this.backoffBaseMs };
  }

  /** A proxy failed (its connection, its tunnel, its authentication): out for a back-off. Returns until when. */
  failed(exit: string, now: number): number {
    if (exit === DIRECT) return now;
    const known = this.out.get(exit);
    // Requests in flight when it went out fail too: one outage is one failure, not one per request.
    if (known !== undefined && known.until > now) return known.until;
    const failures = (known?.failures ?? 0) + 1;
    const until = now + Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** Math.min(failures - 1, 30));
    this.out.set(exit, { failures, until });
    return until;
  }

  /** A request went through `exit`: its failures are forgiven. */
  succeeded(exit: string): void {
    if (this.out.size > 0) this.out.delete(exit);
  }

  /** Proxies out of their tier now, and until when (for status pages and tests). */
  outOfService(now: number): Array<{ exit: string; until: number }> {
    return [...this.out].filter(([, down]) => down.until > now).map(([exit, down]) => ({ exit, until: down.until }));
  }

  /**
   * The host's session number: by time, each host turning over at its own offset within the
   * period (so hosts do not all move at once, and every process agrees), and by requests counted here.
   */
  private sessionOf(host: string, now: number, count: boolean): string {
    let timed = 0;
    if (this.sessionMs > 0) timed = Math.floor((now + (score(host) % this.sessionMs)) / this.sessionMs);
    if (this.sessionRequests === 0) return String(timed);
    let session = this.sessions.get(host);
    if (session === undefined) {
      if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
      session = { requests: 0, session: 0 };
      this.sessions.set(host, session);
    }
    // A request re-routed after its proxy failed is the same request: it does not count again.
    if (count) {
      if (session.requests >= this.sessionRequests) {
        session.session++;
        session.requests = 0;
      }
      session.requests++;
    }
    return `${timed}.${session.session}`;
  }
}
