import { ManualClock } from '@trawl/core';
import { AddressGate } from '@trawl/frontier';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { AddressGroups, type AddressSettings, type AddressTurn } from './address-step.js';

/**
 * The politeness key as the fetch stage applies it, over the real address gate: which group a
 * request joins, when it costs no Redis call, and how requests already under way are counted.
 */
const t: TestRedis = testRedis('address-step');
afterAll(() => t.cleanup());

const ADDRESSES: Record<string, string> = { 'a.shared.test': '203.0.113.7', 'b.shared.test': '203.0.113.7', 'c.shared.test': '203.0.113.7', 'x.other.test': '203.0.113.7', 'y.third.test': '203.0.113.7', 'alone.test': '198.51.100.1' };
let clock: ManualClock;
let calls: string[];
let groups: AddressGroups;
let run = 0;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
  calls = [];
  const gate = new AddressGate(t.redis, { prefix: `${t.prefix}:${run}`, clock, holdMs: 30_000 });
  groups = new AddressGroups({
    gate: {
      acquire: (group, holder, limits, options) => {
        calls.push(`acquire ${group} ${holder}${options?.force ? ' (forced)' : ''}`);
        return gate.acquire(group, holder, limits, options);
      },
      release: (group, holder, nextAt) => {
        calls.push(`release ${group} ${holder}`);
        return gate.release(group, holder, nextAt);
      },
    },
    serverAddress: async (hostname) => ADDRESSES[hostname] ?? null,
    onError: (error) => {
      throw error;
    },
  });
});

const host = (hostname: string, holder: string) => ({ host: hostname, hostname, holder });
const settings = (key: AddressSettings['key'], ipMaxInFlight = 2): AddressSettings => ({ key, ipMaxInFlight, ipMinIntervalMs: 0, minDelayMs: 1000 });
const go = (turn: AddressTurn) => {
  if (turn.kind !== 'go') throw new Error(`expected go, got a wait until ${turn.at}`);
  return turn;
};
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('AddressGroups', () => {
  it('host mode: an address with one host name costs no Redis call', async () => {
    for (let i = 0; i < 5; i++) go(await groups.enter(host('alone.test', `l${i}`), settings('host'))).leave(clock.now());
    expect(calls).toEqual([]);
  });

  it('host mode: once an address serves a second name, requests to it are capped, the one under way counted first', async () => {
    const first = go(await groups.enter(host('a.shared.test', 'l1'), settings('host')));
    expect(calls).toEqual([]);
    go(await groups.enter(host('b.shared.test', 'l2'), settings('host')));
    expect(calls).toEqual(['acquire ip:203.0.113.7 l1 (forced)', 'acquire ip:203.0.113.7 l2']);
    // Two in flight (l1 counted, l2): the cap of 2 refuses a third.
    expect((await groups.enter(host('c.shared.test', 'l3'), settings('host'))).kind).toBe('wait');
    first.leave(clock.now());
    await settle();
    expect(calls).toContain('release ip:203.0.113.7 l1');
    clock.advance(25);
    go(await groups.enter(host('c.shared.test', 'l3'), settings('host')));
  });

  it('ip mode: one request in flight per address whatever the name, and the next after the delay its release asked', async () => {
    const first = go(await groups.enter(host('alone.test', 'l1'), settings('ip')));
    expect((await groups.enter(host('alone.test', 'l2'), settings('ip'))).kind).toBe('wait');
    go(await groups.enter(host('a.shared.test', 'l3'), settings('ip')));
    first.leave(clock.now() + 1000);
    await settle();
    const turn = await groups.enter(host('alone.test', 'l2'), settings('ip'));
    expect(turn).toEqual({ kind: 'wait', at: clock.now() + 1000 });
  });

  it('domain mode: hosts of one registrable domain share a turn, without asking DNS', async () => {
    go(await groups.enter(host('www.example.com', 'l1'), settings('domain')));
    expect((await groups.enter(host('shop.example.com', 'l2'), settings('domain'))).kind).toBe('wait');
    go(await groups.enter(host('example.org', 'l3'), settings('domain')));
    expect(calls.every((call) => call.includes('domain:'))).toBe(true);
  });

  it('domain mode: the per-address cap still holds across domains on one server, and a refusal gives the domain\'s turn back', async () => {
    const ADDRESS = 'ip:203.0.113.7';
    go(await groups.enter(host('a.shared.test', 'l1'), settings('domain')));
    go(await groups.enter(host('x.other.test', 'l2'), settings('domain')));
    expect(calls).toEqual(['acquire domain:shared.test l1', 'acquire domain:other.test l2', `acquire ${ADDRESS} l1 (forced)`, `acquire ${ADDRESS} l2`]);
    calls = [];
    // A third domain on the same server: its domain is free, the address (cap 2) is not.
    expect((await groups.enter(host('y.third.test', 'l3'), settings('domain'))).kind).toBe('wait');
    await settle();
    expect(calls).toEqual(['acquire domain:third.test l3', `acquire ${ADDRESS} l3`, 'release domain:third.test l3']);
  });

  it('a host that does not resolve goes on ungated (its request meets the DNS failure), never throws', async () => {
    go(await groups.enter(host('nowhere.test', 'l1'), settings('ip')));
    expect(calls).toEqual([]);
  });
});
