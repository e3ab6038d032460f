import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load.js';
import { DEFAULT_PRIORITY_WEIGHTS } from './priority.js';

const weightsOf = (value: string) => loadConfig({ env: { TRAWL_PRIORITY_WEIGHTS: value } }).dispatch.priorityWeights;

describe('TRAWL_PRIORITY_WEIGHTS', () => {
  it('defaults to the general crawl\'s weights, unset or empty', () => {
    expect(loadConfig({ env: {} }).dispatch.priorityWeights).toEqual(DEFAULT_PRIORITY_WEIGHTS);
    expect(weightsOf('')).toEqual(DEFAULT_PRIORITY_WEIGHTS);
  });

  it('replaces only the weights it names', () => {
    expect(weightsOf('seed=0.7, fresh=0.5')).toEqual({ ...DEFAULT_PRIORITY_WEIGHTS, seed: 0.7, fresh: 0.5 });
    expect(weightsOf('authority=0.3,seed=0.7,depth=0.15,sitemap=0.8,fresh=0.5')).toEqual({ authority: 0.3, seed: 0.7, depth: 0.15, sitemap: 0.8, fresh: 0.5 });
  });

  it('takes an object from a config file', () => {
    expect(loadConfig({ env: {}, overrides: { dispatch: { priorityWeights: { depth: 0 } } } }).dispatch.priorityWeights).toEqual({ ...DEFAULT_PRIORITY_WEIGHTS, depth: 0 });
  });

  it.each([['speed=1'], ['seed=2'], ['seed=-0.1'], ['seed=high'], ['seed'], ['seed=0.5=1']])('refuses %j, naming the variable', (value) => {
    expect(() => weightsOf(value)).toThrow(ConfigError);
    expect(() => weightsOf(value)).toThrow(/TRAWL_PRIORITY_WEIGHTS/);
  });

  it('reads the host rank\'s lead and window', () => {
    const config = loadConfig({ env: { TRAWL_HOST_RANK_LEAD_MS: '0', TRAWL_HOST_RANK_WINDOW: '8' } });
    expect(config.dispatch).toMatchObject({ hostRankLeadMs: 0, hostRankWindow: 8 });
    expect(loadConfig({ env: {} }).dispatch).toMatchObject({ hostRankLeadMs: 60_000, hostRankWindow: 4 });
  });
});
