/**
 * The truth about planted duplicates: which served URLs carry the same article as which
 * original page, and whether their bodies are byte-identical to it or only close. A cluster is
 * an original page with at least one copy: its variant (print view, near copy, session-id URL)
 * and, on each mirror of its host, the mirrored page and variant.
 */
import type { VariantKind, WebModel } from './model.js';
import { pagePath, pagesOf, variantOf, variantPath } from './model.js';
import type { OriginOf } from './render.js';

export interface DuplicateInfo {
  /** The cluster's id: the canonical URL of its original page. */
  cluster: string;
  /** `original` for the cluster's page itself; `exact` = byte-identical body to it; `near` = the same article in other bytes. */
  relation: 'original' | 'exact' | 'near';
  /** Which variant of the page this URL serves; null for the page itself (or its mirrored copy). */
  variant: VariantKind | null;
  /** Served by a mirror host. */
  mirror: boolean;
}

/** Session variants are the page's own bytes; print views and near copies are not. */
export const variantRelation = (variant: VariantKind): 'exact' | 'near' => (variant === 'print' || variant === 'near' ? 'near' : 'exact');

/** Every URL of every cluster, keyed by URL. Pages without any copy are left out. */
export function duplicateClusters(model: WebModel, originOf: OriginOf): Map<string, DuplicateInfo> {
  const truth = new Map<string, DuplicateInfo>();
  const mirrorBase = model.mirrorBase ?? model.hosts;
  for (let host = 0; host < model.hosts; host++) {
    const mirrors = (model.mirrors ?? []).flatMap((original, j) => (original === host ? [mirrorBase + j] : []));
    for (let page = 0; page < pagesOf(model, host); page++) {
      const variant = variantOf(model, host, page);
      if (variant === null && mirrors.length === 0) continue;
      const cluster = `${originOf(host)}${pagePath(model, host, page)}`;
      truth.set(cluster, { cluster, relation: 'original', variant: null, mirror: false });
      for (const served of [host, ...mirrors]) {
        const mirror = served !== host;
        if (mirror) truth.set(`${originOf(served)}${pagePath(model, host, page)}`, { cluster, relation: 'exact', variant: null, mirror });
        if (variant !== null) {
          truth.set(`${originOf(served)}${variantPath(model, host, page, variant)}`, { cluster, relation: variantRelation(variant), variant, mirror });
        }
      }
    }
  }
  return truth;
}
