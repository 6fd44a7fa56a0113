/**
 * Pins the engine's observable behaviour to hashes taken before its hot paths were optimised
 * (issue 13): for fixed seeds, the SHA-256 of everything a user or the store can see — every
 * command's outcome (events, or rejection code, message and field), every change set drained at
 * irregular intervals, the snapshot after a restore in the middle and the final snapshot and
 * audit — must not change. Keys are sorted before hashing, so only values and order count, not
 * the order in which an object's properties happen to be written.
 *
 * If a change is MEANT to alter behaviour, the hashes change with it; say why in the commit.
 */
import assert from 'node:assert/strict';
import { createHash, type Hash } from 'node:crypto';
import { test } from 'node:test';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { Command } from '../../src/engine/types.js';
import { ASSETS, MARKETS, mulberry32, newEngine } from './fixtures.js';
import { ReferenceBook } from './reference-book.js';
import { Generator } from './stream.js';

/** JSON with object keys sorted at every depth; bigints as strings. */
function canonical(value: unknown): string {
  if (typeof value === 'bigint') return `"${value}n"`;
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

function feed(hash: Hash, tag: string, value: unknown): void {
  hash.update(tag);
  hash.update(canonical(value));
  hash.update('\n');
}

function streamHash(seed: number, commands: number): string {
  let engine = newEngine();
  const ref = new ReferenceBook(ASSETS, MARKETS);
  const gen = new Generator(seed, ref);
  const hash = createHash('sha256');
  const funding = gen.funding();
  let time = 1_700_000_000_000_000;
  // Drains at irregular gaps (1..97 commands), as batches of varying size would.
  let nextDrain = 1;
  for (let i = 0; i < commands; i++) {
    const command = i < funding.length ? funding[i]! : gen.next();
    time += 1 + (i % 7);
    const result = engine.apply(command, time as Micros);
    // The generator reads open orders and balances from the reference book.
    ref.apply(command, time);
    feed(hash, 'r', result);
    if (i === nextDrain) {
      feed(hash, 'c', engine.drainChanges());
      nextDrain += 1 + ((i * 7919) % 97);
    }
    if (i === commands >> 1) {
      // A restored engine must carry on identically (its snapshot is pinned too).
      feed(hash, 'c', engine.drainChanges());
      const snapshot = engine.snapshot();
      feed(hash, 's', snapshot);
      engine = Engine.restore(JSON.parse(JSON.stringify(snapshot)));
    }
  }
  feed(hash, 'c', engine.drainChanges());
  feed(hash, 's', engine.snapshot());
  feed(hash, 'a', engine.audit());
  return hash.digest('hex');
}

/**
 * The shape of `bench:engine`'s deep scenario, small: 60 users, a preloaded book on many levels,
 * then limit orders near the mid, cancels of any id placed so far (open, done or another user's)
 * and market orders sweeping several levels, on BTC/EUR (maker and taker fees) and ETH/EUR.
 */
function deepHash(seed: number, preload: number, commands: number): string {
  const engine = newEngine();
  const rnd = mulberry32(seed);
  const hash = createHash('sha256');
  const users = 60;
  const time = (i: number) => (1_700_000_000_000_000 + i) as Micros;
  let t = 0;
  const run = (command: Command): void => {
    feed(hash, 'r', engine.apply(command, time(t++)));
  };
  for (let u = 1; u <= users; u++) {
    for (const a of ASSETS) {
      run({ kind: 'deposit', userId: u as UserId, asset: a.code as AssetCode, amount: 1e14 as Amount });
    }
  }
  const placed: [number, number][] = [];
  let nextId = engine.sequences().nextOrderId;
  const mids = [300_000, 5_000];
  for (let i = 0; i < preload + commands; i++) {
    const market = rnd() < 0.8 ? 0 : 1;
    const mid = mids[market]!;
    const buy = rnd() < 0.5;
    const user = 1 + Math.floor(rnd() * users);
    const r = i < preload ? 0 : rnd();
    if (r >= 0.55 && r < 0.9 && placed.length > 0) {
      const [id, owner] = placed[Math.floor(rnd() * placed.length)]!;
      run({ kind: 'cancelOrder', userId: (rnd() < 0.95 ? owner : user) as UserId, orderId: id as OrderId });
    } else {
      const volume = Math.floor(Math.exp(Math.log(1_000) + rnd() * (Math.log(20_000_000) - Math.log(1_000))));
      const distance = i < preload ? 2 + Math.floor(rnd() * 200) : Math.floor(-Math.log(1 - rnd()) * 25) - 1;
      const limit = r < 0.55;
      run({
        kind: 'placeOrder',
        userId: user as UserId,
        marketId: (market + 1) as MarketId,
        side: buy ? 'buy' : 'sell',
        type: limit ? 'limit' : 'market',
        price: (limit ? (buy ? mid - distance : mid + distance) : 0) as Price,
        volume: volume as Volume,
      });
      placed.push([nextId, user]);
      nextId = engine.sequences().nextOrderId;
    }
    if (i % 89 === 88) feed(hash, 'c', engine.drainChanges());
  }
  feed(hash, 'c', engine.drainChanges());
  feed(hash, 's', engine.snapshot());
  feed(hash, 'a', engine.audit());
  return hash.digest('hex');
}

/** Computed with the engine as it was before the issue-13 optimisations (commit 10eeddb). */
const PINNED: Record<number, string> = {
  1: 'b82d3c3cd95803ed110c5eb886d2951addad62a87cd89d1cbc15ea875d3b3745',
  20240601: '015e988a9f24298b9692dce0680d182efc5deda1ab2d3579597d1bbd893d0e9d',
  987654321: '08d8ec248f4b2c0c15cea77e5b6e4c62b2d90465c371e58e79f9e11f5782ce8c',
};

const PINNED_DEEP = '7432967ede414d0595afc6f99b70d2c8452042f8173ef85c9f749ba097e5341f';

test("a deep book's events, change sets and snapshot are unchanged (bench-like stream)", () => {
  assert.equal(deepHash(20_240_601, 5_000, 20_000), PINNED_DEEP);
});

for (const [seed, expected] of Object.entries(PINNED)) {
  test(`engine events, change sets and snapshots are unchanged for seed ${seed}`, () => {
    assert.equal(streamHash(Number(seed), 12_000), expected);
  });
}
