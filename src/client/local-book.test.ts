/**
 * LocalBook fed with messages built by the server's own payload builders (src/ws/payloads.ts),
 * so the helper is checked against the format the server really sends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BookView, LevelChange } from '../app/ports.js';
import type { AssetCode, FeeRate, MarketId, Price, Side, Volume } from '../domain/types.js';
import { bookSnapshotMessage, bookUpdateMessage, feedMarket } from '../ws/payloads.js';
import type { BookMessage } from './channels.js';
import { LocalBook } from './local-book.js';

const market = feedMarket(
  {
    id: 1 as MarketId,
    base: 'BTC' as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 5000 as Volume,
    makerFee: 16 as FeeRate,
    takerFee: 26 as FeeRate,
  },
  { code: 'EUR' as AssetCode, name: 'Euro', type: 'fiat', decimals: 4 },
);

/** A reference book: price ticks → lots per side, and its sequence. */
class Reference {
  bids = new Map<number, number>();
  asks = new Map<number, number>();
  sequence = 100;
  view(): BookView {
    const sorted = (m: Map<number, number>, desc: boolean) =>
      [...m].sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0])) as [Price, Volume][];
    return { sequence: this.sequence, bids: sorted(this.bids, true), asks: sorted(this.asks, false) };
  }
  change(changes: LevelChange[]): BookMessage {
    for (const c of changes) {
      const side = c.side === 'buy' ? this.bids : this.asks;
      if (c.volume === 0) side.delete(c.price);
      else side.set(c.price, c.volume);
    }
    this.sequence += 1;
    return bookUpdateMessage(market, { sequence: this.sequence, changes }, this.view()) as BookMessage;
  }
  snapshot(): BookMessage {
    return bookSnapshotMessage(market, this.view()) as BookMessage;
  }
}

const level = (side: Side, price: number, volume: number): LevelChange => ({
  side,
  price: price as Price,
  volume: volume as Volume,
});

test('a snapshot then updates reproduce the book; a zero quantity removes a level', () => {
  const ref = new Reference();
  ref.change([level('buy', 300000, 100000), level('buy', 299990, 5000), level('sell', 300010, 7000)]);
  const book = new LocalBook();
  assert.deepEqual(book.apply(ref.snapshot()), { status: 'ok' });
  assert.equal(book.sequence, 101);
  assert.equal(book.symbol, 'BTC/EUR');
  assert.deepEqual(book.bids(), [
    { price: '30000.0', qty: '0.00100000' },
    { price: '29999.0', qty: '0.00005000' },
  ]);

  assert.deepEqual(book.apply(ref.change([level('buy', 300000, 0), level('sell', 300005, 1)])), {
    status: 'ok',
  });
  assert.deepEqual(book.bids(1), [{ price: '29999.0', qty: '0.00005000' }]);
  assert.deepEqual(book.asks(), [
    { price: '30000.5', qty: '0.00000001' },
    { price: '30001.0', qty: '0.00007000' },
  ]);
  assert.equal(book.sequence, 102);
});

test('random changes stay in sync, checksums included (prices of different lengths sort numerically)', () => {
  const ref = new Reference();
  const book = new LocalBook();
  book.apply(ref.snapshot());
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < 300; i += 1) {
    const changes: LevelChange[] = [];
    for (let k = 0; k <= rand(4); k += 1) {
      const bid = rand(2) === 0;
      // Bids 90.0..9999.9, asks 10000.0..109999.9: digit counts differ, string order would be wrong.
      const price = bid ? 900 + rand(99_000) : 100_000 + rand(1_000_000);
      if (changes.some((c) => c.price === price)) continue;
      changes.push(level(bid ? 'buy' : 'sell', price, rand(3) === 0 ? 0 : 1 + rand(10_000_000)));
    }
    assert.deepEqual(book.apply(ref.change(changes)), { status: 'ok' }, `message ${i}`);
  }
  const view = ref.view();
  assert.deepEqual(
    book.bids().map((l) => l.price),
    view.bids.map(([p]) => (p / 10).toFixed(1)),
  );
  assert.deepEqual(
    book.asks().map((l) => l.price),
    view.asks.map(([p]) => (p / 10).toFixed(1)),
  );
});

test('a missing sequence number is a gap: the copy is dropped until the next snapshot', () => {
  const ref = new Reference();
  const book = new LocalBook();
  book.apply(ref.snapshot());
  book.apply(ref.change([level('buy', 1000, 10)]));
  ref.change([level('buy', 1001, 10)]); // lost
  const result = book.apply(ref.change([level('sell', 2000, 10)]));
  assert.deepEqual(result, { status: 'gap', expected: 102, received: 103 });
  assert.equal(book.synced, false);
  assert.deepEqual(book.bids(), []);
  assert.deepEqual(book.apply(ref.change([level('sell', 2001, 10)])), { status: 'awaiting-snapshot' });
  // A resubscription brings a snapshot, and updates apply again.
  assert.deepEqual(book.apply(ref.snapshot()), { status: 'ok' });
  assert.deepEqual(book.apply(ref.change([level('sell', 2000, 0)])), { status: 'ok' });
  assert.deepEqual(
    book.bids().map((l) => l.price),
    ['100.1', '100.0'],
  );
  assert.deepEqual(
    book.asks().map((l) => l.price),
    ['200.1'],
  );
});

test('a duplicated update is a gap too; an update before any snapshot waits', () => {
  const ref = new Reference();
  const book = new LocalBook();
  const update = ref.change([level('buy', 1000, 10)]);
  assert.deepEqual(book.apply(update), { status: 'awaiting-snapshot' });
  book.apply(ref.snapshot());
  assert.equal(book.apply(update).status, 'gap');
});

test('a checksum mismatch is reported and drops the copy', () => {
  const ref = new Reference();
  const book = new LocalBook();
  book.apply(ref.snapshot());
  const message = ref.change([level('buy', 1000, 10)]);
  const tampered: BookMessage = {
    ...message,
    data: { ...message.data, checksum: message.data.checksum ^ 1 },
  };
  const result = book.apply(tampered);
  assert.equal(result.status, 'checksum');
  assert.equal(book.synced, false);
  // Verification can be turned off.
  const lenient = new LocalBook({ verifyChecksum: false });
  lenient.apply(ref.snapshot());
  assert.deepEqual(lenient.apply({ ...tampered, data: { ...tampered.data, sequence: ref.sequence + 1 } }), {
    status: 'ok',
  });
});
