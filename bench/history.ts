/**
 * Simulated-history benchmark (issue 13's replay row):
 *   npm run bench:history [-- --days D] [--runs R]
 *
 * 1. pipeline: `simulateHistory` (src/simulator/history.ts, what `openspot simulate` runs) for D
 *    simulated days (default 1) of the default catalogue, through the real exchange (sequencer,
 *    candle aggregation, an in-memory SQLite store) with simulated time. Reports commands/s and
 *    the wall time of the run. Every command is recorded with its simulated time.
 * 2. engine: the recorded stream replayed into a fresh Engine (Engine.apply with each command's
 *    simulated time, drainChanges every 1,000 as the sequencer would), R times (default 5):
 *    median commands/s. This is the engine's speed on a day of history replayed with simulated
 *    time; the two must agree on every result (a mismatch sets exit code 1).
 *
 * `historyReplayRow()` returns both figures for a summary elsewhere (bench:engine).
 */
import { pathToFileURL } from 'node:url';
import type { Micros } from '../src/domain/types.js';
import { Engine } from '../src/engine/engine.js';
import type { Command } from '../src/engine/types.js';
import { seedCatalogue } from '../src/sequencer/seed.js';
import { type LocalExchange, openExchange } from '../src/sequencer/sequencer.js';
import { simulatedClock, simulateHistory } from '../src/simulator/history.js';
import { DEFAULT_REFERENCE_PRICES } from '../src/simulator/index.js';
import { asyncStore } from '../src/store/async-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

export interface HistoryReplayFigures {
  readonly days: number;
  readonly commands: number;
  readonly trades: number;
  /** The whole pipeline (sequencer, candles, in-memory SQLite), commands/s. */
  readonly pipelinePerSecond: number;
  readonly pipelineSeconds: number;
  /** The engine alone on the recorded stream, median commands/s. */
  readonly enginePerSecond: number;
  /** Commands whose replayed result (accepted or refused) differed from the recorded one. */
  readonly mismatches: number;
}

interface Recorded {
  readonly command: Command;
  readonly time: Micros;
  ok: boolean;
}

export async function historyReplayRow(days = 1, runs = 5): Promise<HistoryReplayFigures> {
  const store = SqliteStore.open({ path: ':memory:' });
  const to = 1_767_225_600_000_000 as Micros; // 2026-01-01T00:00:00Z: fixed, so runs compare
  const from = (to - days * 86_400_000_000) as Micros;
  const clock = simulatedClock(from);
  const exchange = await openExchange({ store: asyncStore(store), clock });
  const recorded: Recorded[] = [];
  // Every command the history submits is recorded, in submission order (the sequencer's
  // application order), with the time it is applied at: the clock only moves between steps,
  // after every command of a step is answered.
  const recording: LocalExchange = Object.assign(Object.create(exchange) as LocalExchange, {
    submit: async (command: Command) => {
      const entry: Recorded = { command, time: clock(), ok: false };
      recorded.push(entry);
      const result = await exchange.submit(command);
      entry.ok = result.ok;
      return result;
    },
  });
  const started = performance.now();
  await seedCatalogue(recording, undefined);
  const summary = await simulateHistory({
    exchange: recording,
    store,
    clock,
    from,
    to,
    seed: 1,
    referencePrices: DEFAULT_REFERENCE_PRICES,
  });
  const pipelineSeconds = (performance.now() - started) / 1000;
  await exchange.close();
  store.close();
  const stream = recorded;

  const rates: number[] = [];
  let mismatches = 0;
  for (let run = 0; run < runs; run++) {
    const engine = new Engine();
    let bad = 0;
    const t0 = performance.now();
    for (let i = 0; i < stream.length; i++) {
      const r = stream[i]!;
      if (engine.apply(r.command, r.time).ok !== r.ok) bad++;
      if (i % 1000 === 999) engine.drainChanges();
    }
    engine.drainChanges();
    rates.push(stream.length / ((performance.now() - t0) / 1000));
    mismatches = Math.max(mismatches, bad);
  }
  rates.sort((a, b) => a - b);
  return {
    days,
    commands: stream.length,
    trades: summary.trades,
    pipelinePerSecond: stream.length / pipelineSeconds,
    pipelineSeconds,
    enginePerSecond: rates[Math.floor(rates.length / 2)]!,
    mismatches,
  };
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} needs a positive integer`);
  return value;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const days = option('days', 1);
  const f = await historyReplayRow(days, option('runs', 5));
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  console.log(`OpenSpot simulated-history benchmark: node ${process.version}, ${process.arch}`);
  console.log(
    `${days} simulated day(s), default catalogue: ${n(f.commands)} commands, ${n(f.trades)} trades`,
  );
  console.log(
    `pipeline (sequencer + candles + in-memory SQLite): ${n(f.pipelinePerSecond)} commands/s (${f.pipelineSeconds.toFixed(1)} s)`,
  );
  console.log(
    `engine alone, replaying the day with simulated time: ${n(f.enginePerSecond)} commands/s (median)`,
  );
  if (f.mismatches > 0) {
    console.log(`WARNING: ${f.mismatches} commands had another result on replay`);
    process.exitCode = 1;
  }
}
