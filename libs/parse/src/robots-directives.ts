/**
 * Page-level robots directives from <meta name="robots|<token>"> (already parsed) and the
 * X-Robots-Tag response header (which may scope a directive to one user agent:
 * "googlebot: noindex"). `none` means noindex + nofollow.
 */
export interface RobotsDirectives {
  noindex: boolean;
  nofollow: boolean;
}

export function parseXRobotsTag(values: string | string[] | undefined, productToken: string): RobotsDirectives {
  const out: RobotsDirectives = { noindex: false, nofollow: false };
  const token = productToken.toLowerCase();
  for (const value of Array.isArray(values) ? values : values === undefined ? [] : [values]) {
    // A header value may hold several comma-separated directives; a "name:" prefix scopes the
    // directives after it to that user agent.
    let scope: string | null = null;
    for (const rawPart of value.split(',')) {
      let part = rawPart.trim().toLowerCase();
      const colon = part.indexOf(':');
      if (colon > 0 && !/^(unavailable_after|max-snippet|max-image-preview|max-video-preview)$/.test(part.slice(0, colon).trim())) {
        scope = part.slice(0, colon).trim();
        part = part.slice(colon + 1).trim();
      }
      if (scope !== null && scope !== token) continue;
      applyDirective(out, part);
    }
  }
  return out;
}

export function applyDirective(out: RobotsDirectives, directive: string): void {
  switch (directive.trim().toLowerCase()) {
    case 'noindex':
      out.noindex = true;
      break;
    case 'nofollow':
      out.nofollow = true;
      break;
    case 'none':
      out.noindex = true;
      out.nofollow = true;
      break;
  }
}

export function mergeDirectives(...all: RobotsDirectives[]): RobotsDirectives {
  return { noindex: all.some((d) => d.noindex), nofollow: all.some((d) => d.nofollow) };
}
