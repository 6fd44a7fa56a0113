/**
 * Fees round up per order (docs/money.md, "Trades, fees and rounding"), checked with fast-check on
 * random markets, fee rates and fill sequences:
 * - after every fill, each order has paid exactly ceil(Σ costᵢ × rateᵢ / 10^8) over its fills so
 *   far (taker fills at the taker rate, later maker fills at the maker rate);
 * - a limit buy's reservation, cost(P, V) + ceil(cost(P, V) × maxRate / 10^8), always covers what
 *   it spends: its reservation never goes negative, and what it spent in all is at most that hold.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  Micros,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { Command, CommandResult, OrderState } from '../../src/engine/types.js';

const T = 1_700_000_000_000_000 as Micros;
const S = 100_000_000n;
const BUYER = 1 as UserId;
const SELLER = 2 as UserId;
const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

function ok(r: CommandResult): CommandResult & { ok: true } {
  if (!r.ok) assert.fail(`refused: ${r.error.code} ${r.error.message}`);
  return r;
}

interface Case {
  quoteDecimals: number;
  makerFee: number;
  takerFee: number;
  price: number;
  /** Lots of the sells that cross the buy when it arrives (it takes them as taker). */
  before: number[];
  /** Lots of the sells that arrive later (the buy is their maker). */
  after: number[];
  /** Ticks below the buy's limit at which each "before" sell rests. */
  discounts: number[];
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  quoteDecimals: fc.integer({ min: 0, max: 4 }),
  makerFee: fc.integer({ min: 0, max: 10_000_000 }),
  takerFee: fc.integer({ min: 0, max: 10_000_000 }),
  price: fc.integer({ min: 1, max: 50_000_000 }),
  before: fc.array(fc.integer({ min: 1, max: 5_000 }), { maxLength: 6 }),
  after: fc.array(fc.integer({ min: 1, max: 5_000 }), { maxLength: 12 }),
  discounts: fc.array(fc.integer({ min: 0, max: 1_000 }), { minLength: 6, maxLength: 6 }),
});

test('each order pays the ceiling of its exact fee, and a limit buy never outspends its reservation', () => {
  fc.assert(
    fc.property(caseArb, (c) => {
      const engine = new Engine();
      const apply = (command: Command) => ok(engine.apply(command, T));
      apply({ kind: 'createAsset', code: 'QQ', name: 'Q', type: 'fiat', decimals: c.quoteDecimals });
      apply({ kind: 'createAsset', code: 'BB', name: 'B', type: 'crypto', decimals: 8 });
      apply({
        kind: 'createMarket',
        base: 'BB' as AssetCode,
        quote: 'QQ' as AssetCode,
        pairDecimals: 2,
        lotDecimals: 6,
        ordermin: 1 as Volume,
        makerFee: c.makerFee as FeeRate,
        takerFee: c.takerFee as FeeRate,
      });
      const market = 1 as MarketId;
      /** Quote units of `volume` lots at `price`, rounded down, as the engine's cost rule. */
      const value = (price: number, volume: number): bigint =>
        (BigInt(price) * BigInt(volume) * 10n ** BigInt(c.quoteDecimals)) / 10n ** 8n;
      /**
       * Places an order, which the engine must accept unless its value is below one quote unit
       * (issue 21's minimum, order_value_too_small): then null.
       */
      const place = (
        command: Extract<Command, { kind: 'placeOrder' }>,
      ): (CommandResult & { ok: true }) | null => {
        const r = engine.apply(command, T);
        if (value(command.price, command.volume) >= 1n) return ok(r);
        assert.ok(
          !r.ok && r.error.code === 'order_value_too_small',
          'an order worth less than one unit is refused',
        );
        return null;
      };
      apply({ kind: 'deposit', userId: BUYER, asset: 'QQ' as AssetCode, amount: (2 ** 52) as Amount });
      apply({ kind: 'deposit', userId: SELLER, asset: 'BB' as AssetCode, amount: (2 ** 52) as Amount });
      const sell = (price: number, volume: number) =>
        place({
          kind: 'placeOrder',
          userId: SELLER,
          marketId: market,
          side: 'sell',
          type: 'limit',
          price: price as Price,
          volume: volume as Volume,
        });
      for (const [i, v] of c.before.entries()) sell(Math.max(1, c.price - c.discounts[i]!), v);
      const volume = [...c.before, ...c.after].reduce((a, b) => a + b, 0) + 1;
      const free = engine.balance(BUYER, 'QQ' as AssetCode).available;
      const placed = place({
        kind: 'placeOrder',
        userId: BUYER,
        marketId: market,
        side: 'buy',
        type: 'limit',
        price: c.price as Price,
        volume: volume as Volume,
      });
      if (placed === null) return;
      const accepted = placed.events.find((e) => e.type === 'orderAccepted');
      assert.ok(accepted?.type === 'orderAccepted');
      const id = accepted.order.id;
      const hold = BigInt(accepted.order.reserved);
      const cost = value(c.price, volume);
      assert.equal(hold, cost + ceilDiv(cost * BigInt(Math.max(c.makerFee, c.takerFee)), S), 'the hold');

      // Per order: Σ cost × rate so far, and the fees charged so far.
      const exact = new Map<number, bigint>();
      const paid = new Map<number, bigint>();
      const check = (r: (CommandResult & { ok: true }) | null) => {
        if (r === null) return;
        for (const e of r.events) {
          if (e.type !== 'trade') continue;
          const t = e.trade;
          for (const [orderId, rate, fee] of [
            [t.takerOrderId, c.takerFee, t.takerFee],
            [t.makerOrderId, c.makerFee, t.makerFee],
          ] as const) {
            const x = (exact.get(orderId) ?? 0n) + BigInt(t.cost) * BigInt(rate);
            const f = (paid.get(orderId) ?? 0n) + BigInt(fee);
            exact.set(orderId, x);
            paid.set(orderId, f);
            assert.equal(f, ceilDiv(x, S), `order ${orderId} has paid the ceiling of its exact fee`);
          }
        }
        const state: OrderState | undefined = engine.openOrder(id);
        assert.ok(state === undefined || state.reserved >= 0, 'the buy reservation stays >= 0');
        assert.ok(engine.balance(BUYER, 'QQ' as AssetCode).reserved >= 0);
        assert.ok(
          engine.audit().every((row) => row.ok),
          'conservation',
        );
      };
      check(placed);
      for (const v of c.after) check(sell(c.price, v));
      const state = engine.openOrder(id);
      assert.ok(state !== undefined, 'one lot is left, so the buy still rests');
      const spent =
        BigInt(free) - BigInt(engine.balance(BUYER, 'QQ' as AssetCode).available) - BigInt(state.reserved);
      assert.equal(spent, BigInt(state.cost) + BigInt(state.fee));
      assert.ok(spent <= hold, `spent ${spent} of a hold of ${hold}`);
    }),
    { numRuns: 300 },
  );
});
