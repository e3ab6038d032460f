import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactSecrets } from './load.js';
import { parseProxyRules, parseProxyTiers, parseProxyUrls, redactProxyUrl } from './proxies.js';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('proxy settings', () => {
  it.each([
    ['dc1=http://u:p@10.0.0.5:3128,socks5://s.example:1080', [{ name: 'dc1', url: 'http://u:p@10.0.0.5:3128' }, { name: '2', url: 'socks5://s.example:1080' }], []],
    ['https://proxy.example', [{ name: '1', url: 'https://proxy.example' }], []],
    ['none=http://a:1', [], ['proxy 1 (none): a name is letters, digits, _ and - (at most 32), and not "none"']],
    ['ftp://a:1', [], ['proxy 1: ftp:// is not supported (http://, https://, socks5://)']],
    ['a=http://u:secret@h:1/path', [], ['proxy 1 (a) (http://***@h:1): a proxy URL has no path, query or fragment']],
    ['a=not a url with secret', [], ['proxy 1 (a): not a URL (expected http://, https:// or socks5://host:port)']],
    ['a=http://h:1,a=http://h:2', [{ name: 'a', url: 'http://h:1' }], ['proxy 2 (a): the name a is used twice']],
  ])('TRAWL_PROXY_URLS %s', (text, entries, problems) => {
    expect(parseProxyUrls(text)).toEqual({ entries, problems });
  });

  it.each([
    ['none;dc1,dc2;res1', [{ name: '1', members: ['none'] }, { name: '2', members: ['dc1', 'dc2'] }, { name: '3', members: ['res1'] }], []],
    ['direct=none; dc=DC1,dc2 ;', [{ name: 'direct', members: ['none'] }, { name: 'dc', members: ['dc1', 'dc2'] }], []],
    ['dc=a,a', [], ['tier dc: a member is listed twice']],
    ['dc=', [], ['tier dc: no members']],
  ])('TRAWL_PROXY_TIERS %s', (text, tiers, problems) => {
    expect(parseProxyTiers(text)).toEqual({ tiers, problems });
  });

  it.each([
    ['example.com=none, Shop.Example=dc', [{ domain: 'example.com', tier: 'none' }, { domain: 'shop.example', tier: 'dc' }], []],
    ['*.example.com=2', [{ domain: 'example.com', tier: '2' }], []],
    ['example.com', [], ['rule "example.com": expected domain=tier (or domain=none)']],
    ['exa mple=1', [], ['rule "exa mple=1": expected domain=tier (or domain=none)']],
    ['bad_$=1', [], ['rule "bad_$=1": not a host or domain name']],
  ])('TRAWL_PROXY_RULES %s', (text, rules, problems) => {
    expect(parseProxyRules(text).rules).toEqual(rules);
    expect(parseProxyRules(text).problems.slice(0, problems.length)).toEqual(problems);
  });

  it('loads into typed lists, one tier of all proxies by default', () => {
    const config = loadConfig({ env: { TRAWL_PROXY_URLS: 'dc1=http://u:p@10.0.0.5:3128,dc2=http://10.0.0.6:3128', TRAWL_PROXY_RULES: 'example.com=none,shop.example=1' } });
    expect(config.fetch.proxyUrls.map((entry) => entry.name)).toEqual(['dc1', 'dc2']);
    expect(config.fetch.proxyTiers).toEqual([]);
    expect(config.fetch.proxyRules).toEqual([{ domain: 'example.com', tier: 'none' }, { domain: 'shop.example', tier: '1' }]);
    expect(loadConfig({ env: {} }).fetch.proxyUrls).toEqual([]);
  });

  it('fails at start naming the setting, without repeating credentials', () => {
    const problems = problemsOf({
      TRAWL_PROXY_URLS: 'dc1=http://user:hunter2@10.0.0.5:3128,bad=gopher://user:hunter2@h:1',
      TRAWL_PROXY_TIERS: 'dc=dc1,dc9',
      TRAWL_PROXY_RULES: 'shop.example=res',
    });
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems).toEqual([expect.stringMatching(/^TRAWL_PROXY_URLS \(fetch\.proxyUrls\): proxy 2 \(bad\): gopher/)]);
    const crossed = problemsOf({ TRAWL_PROXY_URLS: 'dc1=http://user:hunter2@10.0.0.5:3128', TRAWL_PROXY_TIERS: 'dc=dc1,dc9', TRAWL_PROXY_RULES: 'shop.example=res' });
    expect(crossed).toEqual([
      'TRAWL_PROXY_TIERS (fetch.proxyTiers): tier dc names dc9, not in TRAWL_PROXY_URLS (names or positions: dc1) — got "dc=dc1,dc9"',
      'TRAWL_PROXY_RULES (fetch.proxyRules): shop.example=res: no tier res (tiers: dc; or none) — got "shop.example=res"',
    ]);
    expect(crossed.join('\n')).not.toContain('hunter2');
  });

  it('shows proxies without their credentials', () => {
    const config = loadConfig({ env: { TRAWL_PROXY_URLS: 'dc1=http://user:hunter2@10.0.0.5:3128,socks5://tok3n@s.example:1080' } });
    expect((redactSecrets(config).fetch as { proxyUrls: unknown }).proxyUrls).toEqual(['dc1=http://***@10.0.0.5:3128', '2=socks5://***@s.example:1080']);
    expect(JSON.stringify(redactSecrets(config))).not.toMatch(/hunter2|tok3n/);
    expect(redactProxyUrl('http://h:1')).toBe('http://h:1');
  });
});
