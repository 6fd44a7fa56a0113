/**
 * Issue 14, "a failover test": a primary `openspot engine`, an `openspot engine --standby` and two
 * `openspot gateway`s, each a separate OS process, on real NATS (TEST_NATS_URL) and a fresh
 * PostgreSQL database (TEST_DATABASE_URL). Skipped, visibly, without either variable.
 *
 * Several traders (keys and deposits made through the engine's admin API) send signed limit
 * orders (about half cross, half rest) and cancels through BOTH gateways at once (open loop), and
 * a one-at-a-time client through gateway A (its next request only once the previous one is
 * answered); a pusher-js client (src/client connectRealtime) on each gateway follows the order
 * book. In the middle of the load the primary gets SIGKILL; the load goes on. Measured and
 * printed: the takeover's timeline (the standby's lock, its first command, the first command sent
 * after the kill accepted through each gateway) and every client's waits before and after the kill.
 *
 * The failover is invisible (issue 26, section 3): every request — those in flight at the kill
 * included — gets its normal answer (no 503, none unanswered), and none waits more than 1 s longer
 * than the slowest answer of its client before the kill (the baseline, measured in the same run).
 *
 * Once the load stops, with the test's own SQL (test/crash/committed-state-postgres.ts) and the
 * crash tests' checks (test/crash/committed-state.ts, crash-run.ts `checkAcks`):
 * - no acknowledged loss: every 201 order is stored with its id and the parameters sent, every
 *   200 cancel is applied; nothing refused with a 4xx is stored; nothing applied twice (each
 *   placement carries a tag in its volume, so a command resent to the new engine and applied again
 *   would show as a second order with that tag);
 * - the ledger recomputed from its history, a replay through a fresh engine equal to the store,
 *   and conservation per asset against the deposits the test itself made (BigInt, no floats);
 * - the new primary's engine (GET /admin/v1/engine/state) hashes like `Engine.restore` of that
 *   reading of the database;
 * - each gateway serves the committed books (/v1/orderbook levels and every open order);
 * - each WebSocket client's book was never silently wrong: every message applied in sequence with
 *   its checksum verified, a new snapshot only after a 4200 close, and at the end it equals that
 *   gateway's /v1/orderbook.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BookLevelText, BookMessage } from '../src/client/channels.js';
import { bookChecksum } from '../src/client/checksum.js';
import { type BookApplyResult, LocalBook } from '../src/client/local-book.js';
import { bookHash, describeDifference } from './crash/book-hash.js';
import { checkLedger, committedBooks, replayCheck } from './crash/committed-state.js';
import { readCommittedPostgres } from './crash/committed-state-postgres.js';
import {
  type CancelRecord,
  checkAcks,
  type Outcome,
  type PlaceRecord,
  servedBooks,
  TAG_SPACE,
  UNAVAILABLE_BODY,
} from './crash/crash-run.js';
import {
  type Answer,
  fromUnits,
  marketInfos,
  request,
  seededRandom,
  signed,
  toUnits,
} from './crash/http-client.js';
import {
  type ClusterProcess,
  clusterEnv,
  clusterSkipReason,
  engineAdmin,
  eventually,
  listeningUrl,
  realtimeOf,
  startEngine,
  startGateway,
  startStandby,
  type Trader,
  trader,
  waitUntil,
} from './support/cluster.js';

const skip = clusterSkipReason('cluster failover test');

const PAIR = 'BTC/EUR';
/** BTC/EUR mid price in ticks (1 price decimal): 30,000.0 EUR. */
const MID = 300_000;
const TRADERS = 6;
/** A new request through each gateway this often (ms), with at most MAX_IN_FLIGHT waiting. */
const SEND_EVERY_MS = 15;
const MAX_IN_FLIGHT = 48;
/** Per trader: exact decimal strings, also the base of the conservation check. */
const FUNDS: Readonly<Record<string, string>> = { EUR: '50000000', BTC: '2000' };
/**
 * Load before the kill: at least LOAD_BEFORE_MS and ACKED_BEFORE acknowledged commands through
 * each gateway (a loaded machine gets there later); then after both gateways accept commands again.
 */
const LOAD_BEFORE_MS = 2_500;
const ACKED_BEFORE = 50;
const LOAD_AFTER_MS = 1_500;
/** The target is 5 s; this bound keeps a loaded 2-core machine from failing the test. */
const FAILOVER_BOUND_MS = 20_000;
const SEED = Number(process.env.FAILOVER_SEED ?? Date.now() % 1_000_000);

/** How much longer than the worst wait before the kill any request may wait (issue 26: 1 s). */
const EXTRA_WAIT_BOUND_MS = 1_000;

interface GatewayLoad {
  /** A, B: the open-loop load through each gateway; S: the one-at-a-time client (through A). */
  readonly name: 'A' | 'B' | 'S';
  readonly process: ClusterProcess;
  readonly counts: Record<Outcome, number>;
  /** When the first command sent after the kill was acknowledged through this gateway. */
  acceptedAgainAt?: number;
  /** That command: sent how long after the kill, answered in how long (ms). */
  firstAccepted?: { readonly sentAfterKill: number; readonly latency: number };
}

/** What a WebSocket client of one gateway saw, in order. */
type Seen =
  | { readonly kind: 'book'; readonly message: BookMessage; readonly result: BookApplyResult }
  | { readonly kind: 'error'; readonly code: number | undefined }
  | { readonly kind: 'state'; readonly state: string };

describe(
  'failover under signed load: primary engine SIGKILLed, standby takes over, two gateways',
  skip === undefined ? {} : { skip },
  () => {
    test('nothing acknowledged is lost, the new engine is the database, every book is right', {
      timeout: 120_000,
    }, async (t) => {
      t.diagnostic(`seed ${SEED} (FAILOVER_SEED=${SEED} repeats the choices)`);
      const env = await clusterEnv(t);
      const token = env.ADMIN_TOKEN!;
      const primary = await startEngine(t, env);
      const [standby, gatewayA, gatewayB] = await Promise.all([
        startStandby(t, env),
        startGateway(t, env),
        startGateway(t, env),
      ]);

      const listed = await engineAdmin(primary.url, token, 'GET', '/markets');
      assert.equal(listed.status, 200, listed.text);
      const markets = marketInfos(listed.body);
      const market = markets.find((m) => m.pair === PAIR)!;
      const traders: Trader[] = [];
      for (let i = 0; i < TRADERS; i++) traders.push(await trader(primary.url, token, FUNDS));

      // A pusher-js client of each gateway's order book, every message checked as it arrives.
      const watch = async (gateway: ClusterProcess) => {
        const rt = realtimeOf(t, gateway);
        const seen: Seen[] = [];
        const book = new LocalBook();
        rt.pusher.connection.bind('error', (error: { data?: { code?: number } }) =>
          seen.push({ kind: 'error', code: error?.data?.code }),
        );
        rt.pusher.connection.bind('state_change', ({ current }: { current: string }) =>
          seen.push({ kind: 'state', state: current }),
        );
        await rt.connected(10_000);
        await rt.book(PAIR, (message) => seen.push({ kind: 'book', message, result: book.apply(message) }))
          .ready;
        await eventually(() => assert.ok(seen.some((s) => s.kind === 'book')));
        return { gateway, seen, book };
      };
      const watchers = await Promise.all([watch(gatewayA), watch(gatewayB)]);

      // The load (below). Every placement carries a unique tag in its volume (in lots), so every
      // stored order traces back to exactly one request, answered or not.
      const places = new Map<number, PlaceRecord>();
      const cancels: CancelRecord[] = [];
      const openOf = new Map<number, number[]>(traders.map((tr) => [tr.userId, []]));
      const unexpected: string[] = [];
      /** When each request was sent, and how long its answer took. */
      const timing = new Map<
        PlaceRecord | CancelRecord,
        { sentAt: number; ms: number; via: GatewayLoad['name'] }
      >();
      const loads: GatewayLoad[] = [
        { name: 'A', process: gatewayA, counts: zeroCounts() },
        { name: 'B', process: gatewayB, counts: zeroCounts() },
      ];
      const sequential: GatewayLoad = { name: 'S', process: gatewayA, counts: zeroCounts() };
      let nextTag = 1;
      let killedAt: number | undefined;
      let loading = true;
      // However the test ends, the load stops (or its loops would keep the test process alive).
      t.after(() => {
        loading = false;
      });

      const classify = (what: string, answer: Answer | undefined, ok: number, refused: readonly number[]) => {
        if (answer === undefined) return 'unanswered';
        if (answer.status === ok) return 'ack';
        if (refused.includes(answer.status)) return 'refused';
        if (answer.status === 503) {
          if (answer.text !== UNAVAILABLE_BODY || answer.headers.get('retry-after') !== '1')
            unexpected.push(`${what}: a 503 not in the interface's shape: ${answer.text}`);
          return 'unavailable';
        }
        unexpected.push(`${what}: ${answer.status} ${answer.text}`);
        return 'refused';
      };

      const issue = async (load: GatewayLoad, random: () => number): Promise<Outcome> => {
        const url = load.process.url;
        const sentAt = Date.now();
        const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
        const who = pick(traders);
        const open = openOf.get(who.userId)!;
        let outcome: Outcome;
        if (open.length > 0 && random() < 0.25) {
          // Each order is canceled at most once: a refused cancel then means "not applied".
          const orderId = open.splice(Math.floor(random() * open.length), 1)[0]!;
          const record: CancelRecord = { kind: 'cancel', round: 1, trader: who, orderId, outcome: 'pending' };
          cancels.push(record);
          const answer = await signed(url, who, 'DELETE', `/orders/${orderId}`);
          timing.set(record, { sentAt, ms: Date.now() - sentAt, via: load.name });
          record.status = answer?.status;
          outcome = record.outcome = classify(`cancel ${orderId} via ${load.name}`, answer, 200, [404, 409]);
        } else {
          const side = random() < 0.5 ? 'buy' : 'sell';
          // Half aggressive (within 0.5% of the mid: about half of them cross), half passive
          // (0.3% to 1.8% away on their own side: they rest, and cancels find them open), on a grid
          // of 100 ticks (10 EUR) so levels hold several orders and time priority matters.
          const offset =
            random() < 0.5 ? (random() - 0.5) * 0.01 : (side === 'buy' ? -1 : 1) * (0.003 + random() * 0.015);
          const price = Math.round((MID * (1 + offset)) / 100) * 100;
          const tag = nextTag++;
          assert.ok(tag < TAG_SPACE, 'out of tags');
          const volume = (1 + Math.floor(random() * 5)) * TAG_SPACE + tag;
          const record: PlaceRecord = {
            kind: 'place',
            tag,
            round: 1,
            trader: who,
            market,
            side,
            type: 'limit',
            price,
            volume,
            outcome: 'pending',
          };
          places.set(tag, record);
          const answer = await signed(url, who, 'POST', '/orders', {
            order_direction: side,
            order_type: 'limit',
            pair: PAIR,
            volume: fromUnits(volume, market.lotDecimals),
            price: fromUnits(price, market.pairDecimals),
          });
          timing.set(record, { sentAt, ms: Date.now() - sentAt, via: load.name });
          record.status = answer?.status;
          outcome = record.outcome = classify(`placement ${tag} via ${load.name}`, answer, 201, [422]);
          if (outcome === 'ack') {
            const id = /\/orders\/(\d+)$/.exec(answer!.headers.get('location') ?? '')?.[1];
            if (id === undefined) unexpected.push(`placement ${tag}: 201 without a Location`);
            record.orderId = Number(id);
            open.push(record.orderId);
          }
        }
        load.counts[outcome] += 1;
        if (
          outcome === 'ack' &&
          killedAt !== undefined &&
          sentAt > killedAt &&
          load.acceptedAgainAt === undefined
        ) {
          load.acceptedAgainAt = Date.now();
          load.firstAccepted = { sentAfterKill: sentAt - killedAt, latency: load.acceptedAgainAt - sentAt };
        }
        return outcome;
      };

      // Open loop, as many independent clients would send: a new request through each gateway every
      // SEND_EVERY_MS, whatever the earlier ones are waiting for (a request in flight at the kill
      // waits for the gateway's 5 s command timeout; the next ones must not wait behind it), with
      // at most MAX_IN_FLIGHT per gateway. Each request draws from a generator of its own, derived
      // from the seed, its gateway and its number.
      const inFlight: Promise<Outcome>[] = [];
      const dispatchers = loads.map(async (load, g) => {
        let pending = 0;
        for (let n = 0; loading; n++) {
          if (pending < MAX_IN_FLIGHT) {
            pending += 1;
            const random = seededRandom((SEED ^ Math.imul(n * 2 + g + 1, 0x9e3779b1)) >>> 0);
            inFlight.push(issue(load, random).finally(() => (pending -= 1)));
          }
          await sleep(SEND_EVERY_MS);
        }
      });

      // One client that sends its next request only once the previous one is answered (a trader
      // placing one order at a time): a request stuck behind the dead engine stops it entirely.
      const oneAtATime = (async () => {
        for (let n = 0; loading; n++) {
          const random = seededRandom((SEED ^ Math.imul(n + 1, 0x85ebca6b)) >>> 0);
          await issue(sequential, random);
        }
      })();

      await sleep(LOAD_BEFORE_MS);
      await waitUntil(
        () => [...loads, sequential].every((l) => l.counts.ack >= ACKED_BEFORE),
        `${ACKED_BEFORE} commands acknowledged through each gateway before the kill`,
      );
      primary.child.kill('SIGKILL');
      killedAt = Date.now();
      const killed = killedAt;
      try {
        await waitUntil(
          () => loads.every((l) => l.acceptedAgainAt !== undefined),
          `commands accepted again through both gateways within ${FAILOVER_BOUND_MS} ms`,
          FAILOVER_BOUND_MS,
        );
      } catch (error) {
        loading = false;
        throw new Error(`${(error as Error).message}\nstandby:\n${standby.output().slice(-4000)}`);
      }
      await sleep(LOAD_AFTER_MS);
      loading = false;
      await Promise.all(dispatchers);
      await oneAtATime;
      await Promise.all(inFlight);
      assert.deepEqual(unexpected.slice(0, 10), []);
      const failover = loads.map((l) => ({ gateway: l.name, ms: l.acceptedAgainAt! - killed }));
      // Issue 26: every request, including those in flight at the kill, gets its normal answer.
      for (const l of [...loads, sequential])
        assert.deepEqual(
          [l.counts.unavailable, l.counts.unanswered],
          [0, 0],
          `through ${l.name}: ${l.counts.unavailable} answered 503, ${l.counts.unanswered} unanswered during the failover`,
        );
      // ... and none waits more than EXTRA_WAIT_BOUND_MS longer than the slowest answer before it.
      const waits = { before: new Map<string, number[]>(), after: new Map<string, number[]>() };
      let slowest: { via: string; sentAfterKill: number; ms: number } | undefined;
      for (const { sentAt, ms, via } of timing.values()) {
        const during = sentAt + ms >= killed;
        const list = (during ? waits.after : waits.before).get(via) ?? [];
        list.push(ms);
        (during ? waits.after : waits.before).set(via, list);
        if (during && (slowest === undefined || ms > slowest.ms))
          slowest = { via, sentAfterKill: sentAt - killed, ms };
      }
      const quantiles = (list: readonly number[] = []) => {
        const sorted = [...list].sort((a, b) => a - b);
        const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
        return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
      };
      const latency = Object.fromEntries(
        ['A', 'B', 'S'].map((via) => [
          via,
          { before: quantiles(waits.before.get(via)), during: quantiles(waits.after.get(via)) },
        ]),
      );
      const timeline = {
        lockHeld: loggedAt(standby, 'writer lock held') - killed,
        stateLoaded: loggedAt(standby, 'committed state loaded') - killed,
        takingCommands: loggedAt(standby, 'taking commands over NATS') - killed,
        receiptsLoaded: loggedLine(standby, 'taking commands over NATS')?.receipts,
        acceptedAgain: Object.fromEntries(failover.map((f) => [f.gateway, f.ms])),
      };
      process.stdout.write(
        `# takeover (ms after the SIGKILL): ${JSON.stringify(timeline)}\n# waits (ms) answered before the kill and from it on: ${JSON.stringify(latency)}\n`,
      );
      for (const [via, { before, during }] of Object.entries(latency))
        assert.ok(
          during.max <= before.max + EXTRA_WAIT_BOUND_MS,
          `through ${via}: a request waited ${during.max} ms across the failover, the slowest before it ${before.max} ms (${JSON.stringify(slowest)})`,
        );

      // The new primary: its admin API opens once it holds the lock.
      const engineUrl = await listeningUrl(standby);
      await waitUntil(
        () => standby.output().includes('publishing committed batches'),
        'the standby publishing',
      );

      // The committed state, by the test's own SQL, against what the clients were told.
      const committed = await readCommittedPostgres(env.DATABASE_URL!);
      const problems = [
        ...checkLedger(committed),
        ...replayCheck(committed),
        ...checkAcks(committed, places, cancels),
      ];
      assert.deepEqual(problems.slice(0, 20), []);
      // Conservation per asset against what the test itself deposited: every balance (available +
      // reserved) plus the fees taken equals the deposits; no withdrawals were made. Exact units.
      const decimals = new Map(committed.assets.map((a) => [a.code, a.decimals]));
      for (const [asset, amount] of Object.entries(FUNDS)) {
        const deposited = toUnits(amount, decimals.get(asset)!) * BigInt(TRADERS);
        let held = 0n;
        for (const b of committed.balances)
          if (b.asset === asset) held += BigInt(b.available) + BigInt(b.reserved);
        let fees = 0n;
        for (const tr of committed.trades)
          if (asset === market.quote) fees += BigInt(tr.taker_fee) + BigInt(tr.maker_fee);
        let ledger = 0n;
        for (const e of committed.ledger)
          if (e.asset === asset) ledger += e.kind === 'deposit' ? BigInt(e.amount) : -BigInt(e.amount);
        assert.equal(
          ledger,
          deposited,
          `${asset}: the ledger holds ${ledger}, the test deposited ${deposited}`,
        );
        assert.equal(
          held + fees,
          deposited,
          `${asset}: held ${held} + fees ${fees} != deposited ${deposited}`,
        );
      }

      // The new primary's whole engine is what a restore of the committed state holds.
      const state = await engineAdmin(engineUrl, token, 'GET', '/engine/state');
      assert.equal(state.status, 200, state.text);
      const { state_hash, ok, violation } = state.body as {
        state_hash: string;
        ok: boolean;
        violation: unknown;
      };
      assert.deepEqual([ok, violation], [true, null]);
      assert.equal(state_hash, committed.stateHash, 'the new engine differs from a restore of the database');

      // Each gateway serves the committed books: the levels of /v1/orderbook and every open order.
      const committedBook = committedBooks(committed);
      const committedHash = bookHash(committedBook);
      for (const load of loads)
        await eventually(async () => {
          const served = await servedBooks(load.process.url, traders, markets);
          assert.equal(
            bookHash(served),
            committedHash,
            `gateway ${load.name} serves other books:\n${describeDifference(committedBook, served)}`,
          );
        });

      // Each WebSocket client: never silently wrong, and at the end equal to its gateway's book.
      const resnapshots: number[] = [];
      for (const [i, w] of watchers.entries()) {
        const name = loads[i]!.name;
        const levelsOf = async () => {
          const answer = await request(
            `${w.gateway.url}/v1/orderbook?ticker_id=${encodeURIComponent(PAIR)}&depth=0`,
            { method: 'GET' },
          );
          assert.equal(answer?.status, 200, answer?.text);
          const [book] = JSON.parse(answer!.text) as { bids: [string, string][]; asks: [string, string][] }[];
          return book!;
        };
        await eventually(async () => {
          // First what can never come right later: a message applied out of sequence or against
          // its checksum, or a snapshot without a 4200 close before it.
          checkTimeline(w.seen, name);
          const book = await levelsOf();
          const units = (levels: readonly BookLevelText[]) =>
            levels.map(
              (l) => `${toUnits(l.price, market.pairDecimals)}@${toUnits(l.qty, market.lotDecimals)}`,
            );
          const servedUnits = (levels: readonly [string, string][]) =>
            levels.map(([p, v]) => `${toUnits(p, market.pairDecimals)}@${toUnits(v, market.lotDecimals)}`);
          assert.ok(w.book.synced, `the client of ${name} holds no book`);
          assert.deepEqual(units(w.book.bids()), servedUnits(book.bids), `bids of the client of ${name}`);
          assert.deepEqual(units(w.book.asks()), servedUnits(book.asks), `asks of the client of ${name}`);
          // The checksum the gateway last sent is the one of the book it serves.
          const last = w.seen.findLast((s) => s.kind === 'book');
          assert.ok(last?.kind === 'book');
          const text = (levels: readonly [string, string][]) =>
            levels.map(([price, qty]) => ({ price, qty }));
          assert.equal(last.message.data.checksum, bookChecksum(text(book.asks), text(book.bids)));
          assert.equal(last.message.data.checksum, bookChecksum(w.book.asks(), w.book.bids()));
        });
        resnapshots.push(checkTimeline(w.seen, name));
      }

      const all = [...places.values()];
      const count = (records: readonly { outcome: Outcome }[], outcome: Outcome) =>
        records.filter((r) => r.outcome === outcome).length;
      const summary = {
        seed: SEED,
        standbyAfterKillMs: {
          lockHeld: loggedAt(standby, 'writer lock held') - killed,
          takingCommands: loggedAt(standby, 'taking commands over NATS') - killed,
        },
        failoverMs: Object.fromEntries(failover.map((f) => [f.gateway, f.ms])),
        oneAtATime: sequential.counts,
        firstAccepted: Object.fromEntries(loads.map((l) => [l.name, l.firstAccepted])),
        perGateway: Object.fromEntries(loads.map((l) => [l.name, l.counts])),
        placements: {
          sent: all.length,
          acknowledged: count(all, 'ack'),
          refused: count(all, 'refused'),
          unavailable: count(all, 'unavailable'),
          unanswered: count(all, 'unanswered'),
          inFlightAtKill: [...timing.entries()].filter(
            ([r, { sentAt, ms }]) => r.kind === 'place' && sentAt < killed && sentAt + ms > killed,
          ).length,
        },
        cancels: {
          sent: cancels.length,
          acknowledged: count(cancels, 'ack'),
          refused: count(cancels, 'refused'),
          unavailable: count(cancels, 'unavailable'),
          unanswered: count(cancels, 'unanswered'),
        },
        stored: { orders: committed.orders.length, trades: committed.trades.length },
        resnapshots,
      };
      process.stdout.write(
        `# failover under load: commands accepted again ${failover.map((f) => `${f.ms} ms via ${f.gateway}`).join(', ')} after the SIGKILL (target 5 s)\n# ${JSON.stringify(summary)}\n`,
      );
      for (const f of failover)
        assert.ok(f.ms < FAILOVER_BOUND_MS, `gateway ${f.gateway}: accepted again after ${f.ms} ms`);
    });
  },
);

/** When a process logged a line whose message contains `text` (pino's `time`, epoch ms); NaN if never. */
function loggedAt(started: ClusterProcess, text: string): number {
  for (const line of started.output().split('\n')) {
    if (!line.startsWith('{') || !line.includes(text)) continue;
    const { time, msg } = JSON.parse(line) as { time?: unknown; msg?: unknown };
    if (typeof msg === 'string' && msg.includes(text) && typeof time === 'number') return time;
  }
  return Number.NaN;
}

/** The first log line of a process whose message contains `text`, parsed. */
function loggedLine(started: ClusterProcess, text: string): Record<string, unknown> | undefined {
  for (const line of started.output().split('\n')) {
    if (!line.startsWith('{') || !line.includes(text)) continue;
    const parsed = JSON.parse(line) as Record<string, unknown>;
    if (typeof parsed.msg === 'string' && parsed.msg.includes(text)) return parsed;
  }
  return undefined;
}

function zeroCounts(): Record<Outcome, number> {
  return { pending: 0, ack: 0, refused: 0, unanswered: 0, unavailable: 0 };
}

/**
 * A client's book was never silently wrong: every message applied cleanly (in sequence, checksum
 * verified), and a snapshot after the first only once the connection was closed with 4200 and
 * made again (re-snapshotted). Returns how many times it was.
 */
function checkTimeline(seen: readonly Seen[], name: string): number {
  let snapshots = 0;
  let closedSinceSnapshot = false;
  for (const [i, s] of seen.entries()) {
    if (s.kind === 'error') {
      if (s.code === 4200) closedSinceSnapshot = true;
      continue;
    }
    if (s.kind === 'state') continue;
    assert.equal(
      s.result.status,
      'ok',
      `client of ${name}, message ${i}: ${JSON.stringify(s.result)} (${JSON.stringify(s.message)})`,
    );
    if (s.message.type !== 'snapshot') continue;
    if (snapshots > 0)
      assert.ok(closedSinceSnapshot, `client of ${name}: a new snapshot (message ${i}) without a 4200 close`);
    snapshots += 1;
    closedSinceSnapshot = false;
  }
  return snapshots - 1;
}
