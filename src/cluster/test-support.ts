/**
 * Set-up shared by the cluster tests that run an engine in this process (SQLite in memory) over a
 * real NATS server: the venue, the commands they submit, a stream and subjects of the test's own,
 * and a gateway (RemoteExchange) on them. Not part of the build (tsconfig.build.json).
 */
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/transport-node';
import { deleteStreamAfter, uniqueName } from '../../test/support/nats.js';
import type { Amount, AssetCode, FeeRate, MarketId, Price, UserId, Volume } from '../domain/types.js';
import type { Command } from '../engine/types.js';
import type { MarketSnapshot } from '../sequencer/market-view.js';
import type { PlaceOrder } from '../sequencer/ports.js';
import { type LocalExchange, openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import type { GatewayStore } from '../store/postgres/reader.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { type BatchStreamConfig, DEFAULT_BATCH_STREAM } from './batch-stream.js';
import { ClusterKey } from './cluster-key.js';
import { RemoteExchange, type RemoteExchangeOptions } from './remote-exchange.js';
import { subjects } from './settings.js';

interface Cleanup {
  after(fn: () => Promise<void> | void): void;
}

/** The cluster key of every test engine and gateway in this process. */
export const TEST_CLUSTER_KEY = ClusterKey.random();

export const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The gateways here never read history: a store that says so if they do. */
export const noStore = new Proxy({} as GatewayStore, {
  get: (_target, property) => {
    throw new Error(`unexpected store access: ${String(property)}`);
  },
});

/** An exchange on SQLite in memory, closed when the test ends. */
export async function memoryExchange(t: Cleanup): Promise<LocalExchange> {
  const store = asyncStore(SqliteStore.open({ path: ':memory:' }));
  const exchange = await openExchange({ store });
  t.after(async () => {
    await exchange.close();
    await store.close();
  });
  return exchange;
}

type Fees = { makerFee: number; takerFee: number };

export const asset = (code: string) =>
  ({ kind: 'createAsset', code, name: code, type: 'crypto', decimals: 8 }) as const satisfies Command;

/** The market `base`/EUR, with the given fees (none by default). */
export const eurMarket = (base: string, fees: Fees = { makerFee: 0, takerFee: 0 }) =>
  ({
    kind: 'createMarket',
    base: base as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 2,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: fees.makerFee as FeeRate,
    takerFee: fees.takerFee as FeeRate,
  }) as const satisfies Command;

/** The assets `bases` and EUR, and a market `base`/EUR for each base (ids 1, 2, … in that order). */
export async function createEurMarkets(
  exchange: { submit(command: Command): Promise<{ ok: boolean }> },
  bases: readonly string[],
  fees?: Fees,
): Promise<void> {
  const commands: Command[] = [
    ...[...bases, 'EUR'].map(asset),
    ...bases.map((base) => eurMarket(base, fees)),
  ];
  for (const command of commands) {
    const result = await exchange.submit(command);
    assert.ok(result.ok, JSON.stringify(result));
  }
}

export const deposit = (userId: number, asset: string, amount: number) =>
  ({
    kind: 'deposit',
    userId: userId as UserId,
    asset: asset as AssetCode,
    amount: amount as Amount,
  }) as const satisfies Command;

export function limit(
  userId: number,
  marketId: MarketId,
  side: 'buy' | 'sell',
  price: number,
  volume: number,
): PlaceOrder {
  return {
    kind: 'placeOrder',
    userId: userId as UserId,
    marketId,
    side,
    type: 'limit',
    price: price as Price,
    volume: volume as Volume,
  };
}

/** Submits `commands` `perRound` at a time (they share group commits, as under load); each must succeed. */
export async function submitAll(
  exchange: LocalExchange,
  commands: readonly Command[],
  perRound: number,
): Promise<void> {
  for (let i = 0; i < commands.length; i += perRound) {
    const results = await Promise.all(commands.slice(i, i + perRound).map((c) => exchange.submit(c)));
    for (const r of results) assert.ok(r.ok, JSON.stringify(r));
  }
}

/** A snapshot compared without its sequence (a gateway's and the engine's count differently). */
export const withoutSequence = (s: MarketSnapshot) => ({ ...s, sequence: 0 });

/** A batch stream and subject no other test uses (in memory unless `extra` says otherwise), deleted when the test ends. */
export function batchStream(
  t: Cleanup,
  prefix: string,
  extra: Partial<BatchStreamConfig> = {},
): BatchStreamConfig {
  const name = uniqueName(prefix);
  deleteStreamAfter(t, name);
  return { ...DEFAULT_BATCH_STREAM, stream: name, subject: `test.${name}`, storage: 'memory', ...extra };
}

/** A batch stream (batchStream) and engine subjects no other test uses. */
export function testStream(t: Cleanup, prefix: string) {
  const stream = batchStream(t, prefix);
  return { name: stream.stream, stream, names: subjects(`test.${stream.stream}.engine`) };
}

/**
 * A gateway's RemoteExchange following `stream` and sending commands to the engine at `names`,
 * with no history store and a silent logger unless `options` says otherwise; closed when the
 * test ends.
 */
export async function openGateway(
  t: Cleanup,
  nc: NatsConnection,
  { stream, names }: Pick<ReturnType<typeof testStream>, 'stream' | 'names'>,
  options: Partial<RemoteExchangeOptions> = {},
): Promise<RemoteExchange> {
  const remote = await RemoteExchange.open({
    nc,
    store: noStore,
    logger: silent,
    key: TEST_CLUSTER_KEY,
    stream,
    commandSubject: names.commands,
    snapshotSubject: names.snapshot,
    pingSubject: names.ping,
    ...options,
  });
  t.after(() => remote.close());
  return remote;
}
