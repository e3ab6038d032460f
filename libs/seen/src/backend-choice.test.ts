import { describe, expect, it } from 'vitest';
import { type BackendFacts, decideBackend } from './backend-choice.js';

const facts = (over: Partial<BackendFacts>): BackendFacts => ({ choice: 'auto', recorded: null, found: null, moduleAvailable: true, settingsKey: 'ns:settings', ...over });

describe('decideBackend', () => {
  it.each<[string, Partial<BackendFacts>, ReturnType<typeof decideBackend>]>([
    ['first process, auto, module present', {}, { backend: 'redisbloom', record: true }],
    ['first process, auto, no module', { moduleAvailable: false }, { backend: 'lua', record: true }],
    ['first process, explicit lua on a server with the module', { choice: 'lua' }, { backend: 'lua', record: true }],
    ['first process, explicit redisbloom, module present', { choice: 'redisbloom' }, { backend: 'redisbloom', record: true }],
    ['later process, auto follows the record (lua) although the module is there', { recorded: 'lua' }, { backend: 'lua', record: false }],
    ['later process, auto follows the record (redisbloom)', { recorded: 'redisbloom' }, { backend: 'redisbloom', record: false }],
    ['later process, explicit value equal to the record', { choice: 'lua', recorded: 'lua', moduleAvailable: false }, { backend: 'lua', record: false }],
    ['unrecorded filter found in Redis: follow it and record it', { found: 'lua' }, { backend: 'lua', record: true }],
    ['the record wins over keys found', { recorded: 'redisbloom', found: 'lua' }, { backend: 'redisbloom', record: false }],
  ])('%s', (_name, over, expected) => {
    expect(decideBackend(facts(over))).toEqual(expected);
  });

  it.each<[string, Partial<BackendFacts>, RegExp]>([
    ['explicit lua against a redisbloom crawl', { choice: 'lua', recorded: 'redisbloom' }, /^TRAWL_SEEN_BACKEND=lua, but this crawl's seen-set uses redisbloom \(recorded in ns:settings\): set TRAWL_SEEN_BACKEND=redisbloom or auto/],
    ['explicit redisbloom against a lua crawl', { choice: 'redisbloom', recorded: 'lua' }, /^TRAWL_SEEN_BACKEND=redisbloom, but this crawl's seen-set uses lua/],
    ['explicit redisbloom against lua keys found', { choice: 'redisbloom', found: 'lua' }, /uses lua \(its filter keys exist in Redis\)/],
    ['explicit redisbloom, no module', { choice: 'redisbloom', moduleAvailable: false }, /^TRAWL_SEEN_BACKEND=redisbloom, but the Redis server has no RedisBloom module/],
    ['recorded redisbloom, server without the module', { recorded: 'redisbloom', moduleAvailable: false }, /uses redisbloom \(recorded in ns:settings\), but the Redis server has no RedisBloom module/],
  ])('refuses: %s', (_name, over, message) => {
    const decision = decideBackend(facts(over));
    expect(decision).toHaveProperty('problem');
    expect((decision as { problem: string }).problem).toMatch(message);
  });
});
