import type { HostHealthState } from '@trawl/frontier';
import { type BlockOptions, type BlockSignal, type BlockVerdict, DEFAULT_BLOCK_BODY_MARKERS, DEFAULT_BLOCK_URL_MARKERS, nextBlockState } from '@trawl/politeness';
import type { PipelineDeps } from '../deps.js';

/** The block detector's verdict on one answer of a host, acted on. */
export interface Judgement {
  /** The host's block state after this answer (undefined: not looked for), to store with its health. */
  blocks?: number;
  level?: number;
  verdict: BlockVerdict['kind'];
  /** A tier above the one this answer came through was left (a refusal is then worth another try there). */
  canEscalate: boolean;
}

const NOT_LOOKED_FOR: Judgement = { verdict: 'fine', canEscalate: false };

/**
 * Runs the block detector on one answer of `host` (`signal` null: an answer that is no refusal,
 * which ends a run of them) and carries out its verdict: a host judged blocked moves up one proxy
 * tier (its next request, robots.txt first, goes through the new one), or is paused with its
 * reason when no tier is left.
 */
export async function judgeAnswer(
  deps: Pick<PipelineDeps, 'blocking' | 'counters' | 'logger'>,
  host: string,
  health: HostHealthState,
  signal: BlockSignal | null,
): Promise<Judgement> {
  const { blocking } = deps;
  if (blocking === undefined) return NOT_LOOKED_FOR;
  if (signal !== null) deps.counters.add('blockSignals');
  const level = health.level ?? 0;
  const { tier, canEscalate } = blocking.tierOf(host, level);
  const verdict = nextBlockState({ blocks: health.blocks ?? 0, level }, signal, canEscalate, blocking.options);
  const from = tier ?? 'none';
  if (verdict.kind === 'escalate') {
    const toTier = blocking.tierOf(host, verdict.state.level).tier;
    deps.counters.add('hostsEscalated');
    deps.logger.warn({ host, tier: from, toTier, reason: verdict.reason }, 'host refuses the crawler: moving it up a proxy tier');
    blocking.onBlocked?.({ host, tier: from, action: 'escalated', reason: verdict.reason, toTier });
  } else if (verdict.kind === 'pause') {
    deps.counters.add('hostsBlocked');
    await blocking.pause(host, verdict.reason);
    deps.logger.warn({ host, tier: from, reason: verdict.reason }, 'host refuses the crawler and no proxy tier is left: paused until an operator resumes it');
    blocking.onBlocked?.({ host, tier: from, action: 'paused', reason: verdict.reason, toTier: null });
  }
  return { blocks: verdict.state.blocks, level: verdict.state.level, verdict: verdict.kind, canEscalate };
}

/** The host's health with the judgement's block state, as the release stores it. */
export function withBlocks(health: HostHealthState, judgement: Judgement): HostHealthState {
  if (judgement.blocks === undefined) return health;
  return { ...health, blocks: judgement.blocks, level: judgement.level };
}

/** The block detector's options from the settings (TRAWL_BLOCK_*): unset marker lists are the built-in ones. */
export function blockOptionsOf(settings: { blockThreshold: number; blockMarkers?: readonly string[]; blockUrlMarkers?: readonly string[] }): BlockOptions {
  return {
    threshold: settings.blockThreshold,
    bodyMarkers: (settings.blockMarkers ?? DEFAULT_BLOCK_BODY_MARKERS).map((marker) => marker.toLowerCase()),
    urlMarkers: (settings.blockUrlMarkers ?? DEFAULT_BLOCK_URL_MARKERS).map((marker) => marker.toLowerCase()),
  };
}
