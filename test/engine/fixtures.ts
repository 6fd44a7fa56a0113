/**
 * Shared set-up for the engine tests: three markets with different decimals, a seeded PRNG, and a
 * helper that creates the catalogue in a fresh engine.
 */
import assert from 'node:assert/strict';
import type { AssetCode, AssetType, FeeRate, MarketId, Micros, Volume } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { Command, EngineOptions } from '../../src/engine/types.js';
import type { RefAsset, RefMarket } from './reference-book.js';

export const ASSETS: readonly (RefAsset & { readonly type: AssetType })[] = [
  { code: 'BTC', decimals: 8, type: 'crypto' },
  { code: 'EUR', decimals: 2, type: 'fiat' },
  { code: 'ETH', decimals: 10, type: 'crypto' },
  { code: 'USDT', decimals: 6, type: 'crypto' },
];

/**
 * 1: BTC/EUR, cost divisor 10^7 (price x volume is often above 2^53 for large orders).
 * 2: ETH/BTC, maker fee above taker fee (the buy hold uses the larger one), divisor 10.
 * 3: ETH/USDT, quote more precise than price x lot (a cost multiplier of 10), no maker fee.
 */
export const MARKETS: readonly RefMarket[] = [
  {
    id: 1,
    base: 'BTC',
    quote: 'EUR',
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1000,
    makerFee: 160_000,
    takerFee: 260_000,
  },
  {
    id: 2,
    base: 'ETH',
    quote: 'BTC',
    pairDecimals: 5,
    lotDecimals: 4,
    ordermin: 10,
    makerFee: 300_000,
    takerFee: 200_000,
  },
  {
    id: 3,
    base: 'ETH',
    quote: 'USDT',
    pairDecimals: 2,
    lotDecimals: 3,
    ordermin: 1,
    makerFee: 0,
    takerFee: 100_000,
  },
];

export function catalogueCommands(): Command[] {
  const commands: Command[] = ASSETS.map((a) => ({
    kind: 'createAsset',
    code: a.code,
    name: a.code,
    type: a.type,
    decimals: a.decimals,
  }));
  for (const m of MARKETS) {
    commands.push({
      kind: 'createMarket',
      base: m.base as AssetCode,
      quote: m.quote as AssetCode,
      pairDecimals: m.pairDecimals,
      lotDecimals: m.lotDecimals,
      ordermin: m.ordermin as Volume,
      makerFee: m.makerFee as FeeRate,
      takerFee: m.takerFee as FeeRate,
    });
  }
  return commands;
}

/** A fresh engine with the catalogue above; market ids are checked to be 1, 2, 3. */
export function newEngine(options: EngineOptions = {}): Engine {
  const engine = new Engine(options);
  for (const c of catalogueCommands()) {
    const r = engine.apply(c, 0 as Micros);
    assert.ok(r.ok, `catalogue command refused: ${JSON.stringify(r)}`);
  }
  assert.deepEqual(
    engine.marketList().map((m) => m.id),
    MARKETS.map((m) => m.id as MarketId),
  );
  return engine;
}

export const baseUnitsPerLot = (m: RefMarket): number =>
  10 ** (ASSETS.find((a) => a.code === m.base)!.decimals - m.lotDecimals);

/** mulberry32: a tiny deterministic 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
