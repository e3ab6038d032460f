import type { Config } from '@trawl/config';
import { type CrawlPolicy, policyFromConfig, type PolicyStore, withSettings } from '@trawl/model';
import type { Logger } from '@trawl/telemetry';

/** Settings that differ between two policies (scope and bookkeeping fields aside). */
export function policyDifferences(a: CrawlPolicy, b: CrawlPolicy): string[] {
  const { version: _v1, scope: s1, pagesBaseline: _b1, ...restA } = a;
  const { version: _v2, scope: s2, pagesBaseline: _b2, ...restB } = b;
  const out: string[] = [];
  if (s1.mode !== s2.mode) out.push('scope');
  for (const key of Object.keys(restA) as (keyof typeof restA)[]) {
    if (JSON.stringify(restA[key]) !== JSON.stringify(restB[key])) out.push(key);
  }
  return out;
}

/**
 * Publishes the crawl policy this process's configuration describes (`TRAWL_SCOPE`,
 * `TRAWL_MAX_DEPTH`, `TRAWL_MIN_DELAY_MS`, …), keeping the scope earlier seeds widened. Nothing
 * is published when the stored policy already says the same, so restarting a scheduler does not
 * disturb a crawl. `pagesBaseline` is where a `TRAWL_MAX_PAGES` limit starts counting.
 */
export async function publishConfigPolicy(
  store: Pick<PolicyStore, 'load' | 'update'>,
  config: Readonly<Config>,
  options: { pagesBaseline: number; logger: Logger },
): Promise<CrawlPolicy> {
  const fresh = policyFromConfig(config, []);
  const existing = await store.load();
  if (existing && policyDifferences(existing, fresh).length === 0) return existing;
  return store.update((stored) => {
    if (stored) {
      const changed = policyDifferences(stored, fresh);
      if (changed.length > 0) options.logger.warn({ changed }, 'publishing this process\'s crawl settings over the ones the crawl had');
    }
    return withSettings(stored, fresh, options.pagesBaseline);
  });
}
