/**
 * LocalBook fed with messages built by the server's own payload builders (src/ws/payloads.ts),
 * so the helper is checked against the format the server really sends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssetCode, FeeRate, MarketId, Price, Side, Volume } from '../domain/types.js';
import type { BookView, LevelChange } from '../sequencer/ports.js';
import { bookSnapshotMessage, bookUpdateMessages, feedMarket } from '../ws/payloads.js';
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
  /** Applies one batch of changes (one per level); its update messages, one per change. */
  batch(changes: readonly (readonly [Side, number, number])[]): BookMessage[] {
    const list: LevelChange[] = [];
    for (const [side, price, volume] of changes) {
      const levels = side === 'buy' ? this.bids : this.asks;
      const before = levels.get(price) ?? 0;
      if (volume === 0) levels.delete(price);
      else levels.set(price, volume);
      this.sequence += 1;
      list.push({
        side,
        price: price as Price,
        before: before as Volume,
        volume: volume as Volume,
        sequence: this.sequence,
      });
    }
    return bookUpdateMessages(market, list, this.view()) as BookMessage[];
  }
  snapshot(): BookMessage {
    return bookSnapshotMessage(market, this.view()) as BookMessage;
  }
}

const applyAll = (book: LocalBook, messages: readonly BookMessage[]) =>
  messages.map((message) => book.apply(message).status);

test('a snapshot then updates reproduce the book; a zero quantity removes a level', () => {
  const ref = new Reference();
  ref.batch([
    ['buy', 300000, 100000],
    ['buy', 299990, 5000],
    ['sell', 300010, 7000],
  ]);
  const book = new LocalBook();
  assert.deepEqual(book.apply(ref.snapshot()), { status: 'ok' });
  assert.equal(book.sequence, 103);
  assert.equal(book.symbol, 'BTC/EUR');
  assert.deepEqual(book.bids(), [
    { price: '30000.0', qty: '0.00100000' },
    { price: '29999.0', qty: '0.00005000' },
  ]);

  const messages = ref.batch([
    ['buy', 300000, 0],
    ['sell', 300005, 1],
  ]);
  assert.deepEqual(
    messages.map((m) => [m.data.bids, m.data.asks]),
    [
      [{ price: '30000.0', qty: '0.00000000' }, []],
      [[], { price: '30000.5', qty: '0.00000001' }],
    ],
  );
  assert.deepEqual(applyAll(book, messages), ['ok', 'ok']);
  assert.deepEqual(book.bids(1), [{ price: '29999.0', qty: '0.00005000' }]);
  assert.deepEqual(book.asks(), [
    { price: '30000.5', qty: '0.00000001' },
    { price: '30001.0', qty: '0.00007000' },
  ]);
  assert.equal(book.sequence, 105);
});

test('random changes stay in sync, every checksum included (prices of different lengths sort numerically)', () => {
  const ref = new Reference();
  const book = new LocalBook();
  book.apply(ref.snapshot());
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < 300; i += 1) {
    const changes: [Side, number, number][] = [];
    for (let k = 0; k <= rand(4); k += 1) {
      const bid = rand(2) === 0;
      // Bids 90.0..9999.9, asks 10000.0..109999.9: digit counts differ, string order would be wrong.
      const price = bid ? 900 + rand(99_000) : 100_000 + rand(1_000_000);
      if (changes.some(([, p]) => p === price)) continue;
      changes.push([bid ? 'buy' : 'sell', price, rand(3) === 0 ? 0 : 1 + rand(10_000_000)]);
    }
    const messages = ref.batch(changes);
    assert.deepEqual(
      applyAll(book, messages),
      messages.map(() => 'ok'),
      `batch ${i}`,
    );
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

test('a dropped message is a gap: the copy is dropped until the next snapshot', () => {
  const ref = new Reference();
  const book = new LocalBook();
  book.apply(ref.snapshot());
  const [first, lost, third] = ref.batch([
    ['buy', 1000, 10],
    ['buy', 1001, 10],
    ['sell', 2000, 10],
  ]);
  assert.deepEqual(book.apply(first!), { status: 'ok' });
  void lost;
  assert.deepEqual(book.apply(third!), { status: 'gap', expected: 102, received: 103 });
  assert.equal(book.synced, false);
  assert.deepEqual(book.bids(), []);
  assert.deepEqual(applyAll(book, ref.batch([['sell', 2001, 10]])), ['awaiting-snapshot']);
  // A resubscription brings a snapshot, and updates apply again.
  assert.deepEqual(book.apply(ref.snapshot()), { status: 'ok' });
  assert.deepEqual(applyAll(book, ref.batch([['sell', 2000, 0]])), ['ok']);
  assert.deepEqual(
    book.bids().map((l) => l.price),
    ['100.1', '100.0'],
  );
  assert.deepEqual(
    book.asks().map((l) => l.price),
    ['200.1'],
  );
});

test('a duplicated or late update is ignored and the copy stays in sync; an update before any snapshot waits', () => {
  const ref = new Reference();
  const book = new LocalBook();
  const [update] = ref.batch([['buy', 1000, 10]]);
  assert.deepEqual(book.apply(update!), { status: 'awaiting-snapshot' });
  // The snapshot already contains the update: arriving late, it is stale.
  book.apply(ref.snapshot());
  assert.deepEqual(book.apply(update!), { status: 'stale', sequence: 101, received: 101 });
  const [next] = ref.batch([['sell', 2000, 10]]);
  assert.deepEqual(book.apply(next!), { status: 'ok' });
  // A duplicate of the last update changes nothing.
  assert.deepEqual(book.apply(next!), { status: 'stale', sequence: 102, received: 102 });
  assert.equal(book.synced, true);
  assert.deepEqual(
    book.asks().map((l) => l.price),
    ['200.0'],
  );
});

test('a checksum mismatch is reported and drops the copy', () => {
  const ref = new Reference();
  const book = new LocalBook();
  book.apply(ref.snapshot());
  const [message] = ref.batch([['buy', 1000, 10]]);
  const tampered = {
    ...message!,
    data: { ...message!.data, checksum: message!.data.checksum ^ 1 },
  } as BookMessage;
  const result = book.apply(tampered);
  assert.equal(result.status, 'checksum');
  assert.equal(book.synced, false);
  // Verification can be turned off.
  const lenient = new LocalBook({ verifyChecksum: false });
  lenient.apply(ref.snapshot());
  assert.deepEqual(
    lenient.apply({ ...tampered, data: { ...tampered.data, sequence: ref.sequence + 1 } } as BookMessage),
    { status: 'ok' },
  );
});
