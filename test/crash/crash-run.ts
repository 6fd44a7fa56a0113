/**
 * The HTTP crash scenario, shared by the short test (`crash-http.test.ts`, part of `npm test`) and
 * the long one (`crash.soak.ts`, `npm run test:crash`), on SQLite or on PostgreSQL (crash-store.ts;
 * `crash-postgres.test.ts` in `npm run test:postgres`, `npm run test:crash -- --store postgres`).
 *
 * The real server runs as a child process on one data directory. Several users send signed order
 * placements (limit and market, both sides, prices around a mid so that about half cross) and
 * cancels, many in flight at once. At a seeded random moment the server gets SIGKILL; the test
 * then reads the store file the dead process left and checks it against what the clients were
 * told, restarts the server on the same directory, and checks what the restarted server serves.
 *
 * Each placement carries a unique tag in the last six digits of its volume (in lots), so every
 * stored order can be traced back to exactly one request, including requests whose answer never
 * arrived. What is checked after every kill:
 * - committed history (committed-state.ts): balances = deposits + trades - fees, reservations =
 *   what open orders hold, each order's executed volume, cost and fee = its trades, id sequences
 *   without gaps, conservation per asset, and a replay through a fresh engine equal to the store;
 * - acknowledgements: every 201 placement is stored with the acknowledged id and exactly the
 *   parameters sent; every 200 cancel shows `canceled` by the user; no refused (4xx) command left
 *   anything; a command without an answer is either entirely there or not at all, and stays so
 *   after later crashes; no stored order or user cancel that nobody sent;
 * - after the restart: /readyz 200, /admin/v1/ledger/check ok, every order acknowledged in the
 *   round served by GET /v1/orders/:id to its owner with the committed status and execution, and
 *   the books served (GET /v1/orderbook depth=0 for every market + every user's open orders) hash
 *   to the same value as the books committed in the file at the moment of the kill; also no
 *   request applied twice (each tag stored at most once).
 *
 * On PostgreSQL, some rounds first make the database go away under load while the server runs
 * (a cluster restart, or this database's sessions ended and connections refused: runOutage): the
 * server must answer 503 in the interface's shape and say why on /readyz, take commands again
 * without a restart, and then pass the same committed-state checks, its served books compared
 * with the committed ones while it keeps running. A 503 is in doubt like a missing answer (the
 * connection may have broken after PostgreSQL committed): applied entirely or not at all, and
 * the same at every later check.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  bookFromParts,
  bookHash,
  describeDifference,
  type MarketBook,
  type QueuedOrder,
} from './book-hash.js';
import {
  CANCEL_ALL_REASON,
  type Committed,
  checkLedger,
  committedBooks,
  replayCheck,
  USER_CANCEL_REASON,
} from './committed-state.js';
import {
  type ConditionalSpec,
  checkConditional,
  conditionalBody,
  conditionalSpec,
  isConditional,
  isTriggered,
  type OrderTypeName,
} from './conditional.js';
import { type CrashStore, type OutageKind, openCrashStore, type StoreKind } from './crash-store.js';
import {
  type Answer,
  admin,
  fromUnits,
  markets as listMarkets,
  type MarketInfo,
  mapLimit,
  provisionTrader,
  request,
  seededRandom,
  signed,
  type Trader,
  toUnits,
} from './http-client.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

export interface CrashOptions {
  readonly kills: number;
  readonly seed: number;
  readonly traders?: number;
  /** Requests in flight at once. */
  readonly concurrency?: number;
  /** The kill comes at a uniformly random time in [minLoadMs, maxLoadMs] after the load starts. */
  readonly minLoadMs?: number;
  readonly maxLoadMs?: number;
  readonly log?: (line: string) => void;
  /** Where the server keeps its state (default sqlite; postgres needs TEST_DATABASE_URL). */
  readonly store?: StoreKind;
  /**
   * PostgreSQL only: in these rounds, before the load that ends in the kill, the database goes
   * away under load and comes back while the server keeps running (see runOutage).
   */
  readonly outages?: {
    readonly rounds: readonly number[];
    readonly kind: OutageKind;
    /** `terminate`: how long new connections are refused (default 1500 ms). */
    readonly blockMs?: number;
  };
}

export interface CrashSummary {
  readonly store: StoreKind;
  readonly kills: number;
  /** Times the database went away under load (PostgreSQL restarts or terminated sessions). */
  readonly outages: number;
  readonly seed: number;
  readonly requests: number;
  readonly ackedOrders: number;
  readonly ackedCancels: number;
  /** Acknowledged requests of the order controls: client-id amends, cancel-alls, switches armed. */
  readonly ackedControls: { readonly amend: number; readonly cancelAll: number; readonly switch: number };
  /** Refusals by kind and status, e.g. `cancel 409`. */
  readonly refused: Readonly<Record<string, number>>;
  readonly unanswered: { readonly placements: number; readonly cancels: number };
  /** Of the unanswered placements: how many turned out committed. */
  readonly unansweredCommitted: { readonly placements: number; readonly cancels: number };
  /** Answered 503 while the database was away; in doubt like an unanswered request. */
  readonly unavailable: { readonly placements: number; readonly cancels: number };
  /** Of those: how many turned out committed (the connection broke after PostgreSQL committed). */
  readonly unavailableCommitted: { readonly placements: number; readonly cancels: number };
  /** What /readyz said while the database was away (each distinct body once). */
  readonly readyzDuringOutages: readonly string[];
  readonly orders: number;
  readonly trades: number;
  /** Conditional orders acknowledged, and of the stored ones how many had fired by the end. */
  readonly conditional: { readonly acked: number; readonly triggered: number };
  readonly seconds: number;
}

/**
 * `unavailable`: answered 503 while the database was away. Like `unanswered`, in doubt: a commit
 * whose connection broke after PostgreSQL committed it is answered 503 and is nevertheless there
 * (docs/operations.md, "When the database goes away"); either way it must stay as first found.
 */
export type Outcome = 'pending' | 'ack' | 'refused' | 'unanswered' | 'unavailable';
const inDoubt = (outcome: Outcome): boolean => outcome === 'unanswered' || outcome === 'unavailable';
/** The 503 of POST /v1/orders and DELETE /v1/orders/:id (error shape E) while the store is away. */
export const UNAVAILABLE_BODY = JSON.stringify({ error: 'Service Unavailable' });

export interface PlaceRecord {
  readonly kind: 'place';
  readonly tag: number;
  readonly round: number;
  readonly trader: Trader;
  readonly market: MarketInfo;
  readonly side: 'buy' | 'sell';
  readonly type: OrderTypeName;
  /** ticks; 0 for a market order (as stored); the limit price of a -limit conditional type */
  readonly price: number;
  /** A conditional order's trigger or trailing offset (conditional.ts). */
  readonly conditional?: ConditionalSpec;
  /** lots */
  readonly volume: number;
  /** The order controls it was sent with: a client id, a GTD expiry (Unix seconds). */
  readonly clientOrderId?: string;
  readonly expireSeconds?: number;
  outcome: Outcome;
  status?: number;
  orderId?: number;
  /** For an unanswered placement, once a store was read after its round. */
  committed?: boolean;
}

export interface CancelRecord {
  readonly kind: 'cancel';
  readonly round: number;
  readonly trader: Trader;
  readonly orderId: number;
  outcome: Outcome;
  status?: number;
  committed?: boolean;
}

/**
 * The order controls' requests (PATCH /orders/:id giving a new client id, DELETE /orders,
 * POST /orders/cancel-all-after), checked by checkControls.
 */
export type ControlRecord =
  | {
      readonly kind: 'amend';
      readonly round: number;
      readonly trader: Trader;
      readonly orderId: number;
      readonly clientOrderId: string;
      outcome: Outcome;
      status?: number;
    }
  | {
      readonly kind: 'cancelAll';
      readonly round: number;
      readonly trader: Trader;
      outcome: Outcome;
      status?: number;
      canceled?: number;
    }
  | {
      readonly kind: 'switch';
      readonly round: number;
      readonly trader: Trader;
      outcome: Outcome;
      status?: number;
      /** The acknowledged trigger_time, in units of 100 µs (its 4 decimals). */
      trigger?: number;
    };

/** Lots per tag space: the tag is `volume % TAG_SPACE`. */
export const TAG_SPACE = 1_000_000;
/** Mid prices in ticks (BTC/EUR has 1 price decimal, ETH/EUR 2). */
const MID: Readonly<Record<string, number>> = { 'BTC/EUR': 300_000, 'ETH/EUR': 200_000 };
const FUNDS = { EUR: '50000000', BTC: '2000', ETH: '20000' };

export async function runCrashScenario(options: CrashOptions): Promise<CrashSummary> {
  const log = options.log ?? (() => {});
  const random = seededRandom(options.seed);
  const concurrency = options.concurrency ?? 24;
  const minLoad = options.minLoadMs ?? 300;
  const maxLoad = options.maxLoadMs ?? 1500;
  const storeKind = options.store ?? 'sqlite';
  const outageRounds = new Set(options.outages?.rounds ?? []);
  if (outageRounds.size > 0 && storeKind !== 'postgres')
    throw new Error('database outages are a PostgreSQL scenario');
  const started = Date.now();
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-crash-http-'));
  const places = new Map<number, PlaceRecord>();
  const cancels: CancelRecord[] = [];
  const controls: ControlRecord[] = [];
  const unexpected: string[] = [];
  const readyzSeen = new Set<string>();
  let outagesDone = 0;
  let nextTag = 1;
  let server: ServerProcess | undefined;
  let committed: Committed | undefined;
  let store: CrashStore | undefined;

  try {
    store = await openCrashStore(storeKind, dataDir);
    const crashStore = store;
    const start = () => startServerProcess({ dataDir, env: { ...crashStore.env } });
    server = await start();
    const allMarkets = await listMarkets(server.url);
    const traded = allMarkets.filter((m) => MID[m.pair] !== undefined);
    if (traded.length !== Object.keys(MID).length)
      throw new Error('the default catalogue lacks BTC/EUR or ETH/EUR');
    const traders: Trader[] = [];
    for (let i = 0; i < (options.traders ?? 6); i++)
      traders.push(await provisionTrader(server.url, `crash-${options.seed}-${i}`, FUNDS));
    const openOf = new Map<number, number[]>(traders.map((t) => [t.userId, []]));
    // Each concurrent client draws from its own generator, derived from the seed, its round and
    // its index: what it sends does not depend on how the 24 clients interleave, so a replay with
    // the same CRASH_SEED sends the same choices (the kill lands at another instant, and cancels
    // pick among the orders that are open then).
    const streamOf = (round: number, client: number) =>
      seededRandom((options.seed ^ Math.imul(round * 1024 + client + 1, 0x9e3779b1)) >>> 0);

    let amends = 0;
    /**
     * One of the order controls' requests, recorded: an amend of an open order's client id, a
     * cancel-all, or arming the dead man's switch for an hour (it never fires during the test:
     * what is checked is that its deadline is committed). Undefined when there is nothing to amend.
     */
    const sendControl = async (
      live: ServerProcess,
      round: number,
      trader: Trader,
      open: number[],
      draw: number,
      random: () => number,
      unavailable: (what: string, answer: Answer) => boolean,
    ): Promise<ControlRecord | undefined> => {
      const settle = (record: ControlRecord, answer: Answer | undefined, ok: number, refused: number[]) => {
        if (answer === undefined) record.outcome = 'unanswered';
        else {
          record.status = answer.status;
          if (answer.status === ok) record.outcome = 'ack';
          else if (refused.includes(answer.status)) record.outcome = 'refused';
          else if (unavailable(`${record.kind}`, answer)) record.outcome = 'unavailable';
          else unexpected.push(`${record.kind}: ${answer.status} ${answer.text}`);
        }
      };
      if (draw < 0.1) {
        if (open.length === 0) return undefined;
        const orderId = open[Math.floor(random() * open.length)]!;
        const clientOrderId = `a${++amends}`;
        const record: ControlRecord = {
          kind: 'amend',
          round,
          trader,
          orderId,
          clientOrderId,
          outcome: 'pending',
        };
        controls.push(record);
        const answer = await signed(live.url, trader, 'PATCH', `/orders/${orderId}`, {
          client_order_id: clientOrderId,
        });
        // 409: the order ended meanwhile (filled, or canceled by a request in flight).
        settle(record, answer, 200, [404, 409]);
        return record;
      }
      if (draw < 0.115) {
        const record: ControlRecord = { kind: 'cancelAll', round, trader, outcome: 'pending' };
        controls.push(record);
        const answer = await signed(live.url, trader, 'DELETE', '/orders');
        settle(record, answer, 200, []);
        if (record.outcome === 'ack') {
          record.canceled = (JSON.parse(answer!.text) as { data: { canceled: number } }).data.canceled;
          open.splice(0, open.length);
        }
        return record;
      }
      const record: ControlRecord = { kind: 'switch', round, trader, outcome: 'pending' };
      controls.push(record);
      const answer = await signed(live.url, trader, 'POST', '/orders/cancel-all-after', { timeout: 3600 });
      settle(record, answer, 200, []);
      if (record.outcome === 'ack') {
        const text = (JSON.parse(answer!.text) as { data: { trigger_time: string } }).data.trigger_time;
        record.trigger = Number(text.replace('.', ''));
      }
      return record;
    };

    /**
     * One client request against `live`, recorded. A 503 is expected only while the database is
     * made to go away (`outage`), and must then be in the interface's shape with Retry-After.
     */
    const issuer =
      (live: ServerProcess, round: number, outage: boolean) =>
      async (random: () => number): Promise<Outcome> => {
        const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
        const trader = pick(traders);
        const open = openOf.get(trader.userId)!;
        const unavailable = (what: string, answer: Answer): boolean => {
          if (!outage || answer.status !== 503) return false;
          if (answer.text !== UNAVAILABLE_BODY || answer.headers.get('retry-after') !== '1')
            unexpected.push(`${what}: 503 not in the interface's shape: ${answer.text}`);
          return true;
        };
        const control = random();
        if (control < 0.14) {
          const record = await sendControl(live, round, trader, open, control, random, unavailable);
          if (record !== undefined) return record.outcome;
        }
        if (open.length > 0 && (random() < 0.25 || open.length > 150)) {
          const orderId = open.splice(Math.floor(random() * open.length), 1)[0]!;
          const record: CancelRecord = { kind: 'cancel', round, trader, orderId, outcome: 'pending' };
          cancels.push(record);
          const answer = await signed(live.url, trader, 'DELETE', `/orders/${orderId}`);
          if (answer === undefined) record.outcome = 'unanswered';
          else {
            record.status = answer.status;
            if (answer.status === 200) record.outcome = 'ack';
            else if (answer.status === 404 || answer.status === 409) record.outcome = 'refused';
            else if (unavailable(`cancel ${orderId}`, answer)) record.outcome = 'unavailable';
            else unexpected.push(`cancel ${orderId}: ${answer.status} ${answer.text}`);
          }
          return record.outcome;
        }
        const market = pick(traded);
        // Some placements are conditional orders (issue 22), fired by the load's own trades.
        const conditional = random() < 0.12 ? conditionalSpec(random, MID[market.pair]!) : undefined;
        const side = conditional?.side ?? (random() < 0.5 ? 'buy' : 'sell');
        const type: OrderTypeName = conditional?.type ?? (random() < 0.15 ? 'market' : 'limit');
        // Half the limit orders are aggressive (around the mid: about half of them cross), half
        // passive (0.3% to 1.8% away on their own side: they rest, and cancels find them open).
        const offset =
          random() < 0.5 ? (random() - 0.5) * 0.01 : (side === 'buy' ? -1 : 1) * (0.003 + random() * 0.015);
        // On a grid of 100 ticks (10 EUR for BTC, 1 EUR for ETH), so price levels hold several
        // orders and time priority within a level matters (a restore in the wrong order shows).
        const price =
          conditional?.price ??
          (type === 'market' ? 0 : Math.round((MID[market.pair]! * (1 + offset)) / 100) * 100);
        const tag = nextTag++;
        if (tag >= TAG_SPACE) throw new Error('out of tags');
        const volume = (1 + Math.floor(random() * 30)) * TAG_SPACE + tag;
        // Some limit orders carry a client id, some expire in an hour (GTD): both are committed state.
        const controlDraw = random();
        const clientOrderId = type === 'limit' && controlDraw < 0.15 ? `t${tag}` : undefined;
        const expireSeconds =
          type === 'limit' && controlDraw >= 0.85 ? Math.floor(Date.now() / 1000) + 3600 : undefined;
        const record: PlaceRecord = {
          kind: 'place',
          tag,
          round,
          trader,
          market,
          side,
          type,
          price,
          volume,
          ...(clientOrderId === undefined ? {} : { clientOrderId }),
          ...(expireSeconds === undefined ? {} : { expireSeconds }),
          ...(conditional === undefined ? {} : { conditional }),
          outcome: 'pending',
        };
        places.set(tag, record);
        const answer = await signed(live.url, trader, 'POST', '/orders', {
          order_direction: side,
          order_type: type,
          pair: market.pair,
          volume: fromUnits(volume, market.lotDecimals),
          ...(type === 'limit' ? { price: fromUnits(price, market.pairDecimals) } : {}),
          ...(conditional === undefined ? {} : conditionalBody(conditional, market, fromUnits)),
          ...(clientOrderId === undefined ? {} : { client_order_id: clientOrderId }),
          ...(expireSeconds === undefined ? {} : { time_in_force: 'GTD', expire_time: expireSeconds }),
        });
        if (answer === undefined) {
          record.outcome = 'unanswered';
          return record.outcome;
        }
        record.status = answer.status;
        if (answer.status === 201) {
          const id = /\/orders\/(\d+)$/.exec(answer.headers.get('location') ?? '')?.[1];
          if (id === undefined) unexpected.push(`placement ${tag}: 201 without a Location`);
          record.outcome = 'ack';
          record.orderId = Number(id);
          if (type === 'limit' || conditional !== undefined) open.push(record.orderId);
        } else if (answer.status === 422) record.outcome = 'refused';
        else if (unavailable(`placement ${tag}`, answer)) record.outcome = 'unavailable';
        else unexpected.push(`placement ${tag}: ${answer.status} ${answer.text}`);
        return record.outcome;
      };
    const failOnUnexpected = () => {
      if (unexpected.length > 0)
        throw new Error(`unexpected answers:\n${unexpected.slice(0, 10).join('\n')}`);
    };
    /** Everything checked against the committed state; the books' hash when all is well. */
    const checkCommitted = (c: Committed, when: string): string => {
      const problems = [
        ...checkLedger(c),
        ...replayCheck(c),
        ...checkAcks(c, places, cancels),
        ...checkControls(c, places, controls),
        ...checkConditional(c, places, TAG_SPACE),
      ];
      if (problems.length > 0)
        throw new Error(`${when}, the committed state is wrong:\n${problems.slice(0, 20).join('\n')}`);
      return bookHash(committedBooks(c));
    };
    const forgetClosed = (c: Committed) => {
      for (const [userId, list] of openOf) {
        // Forget orders that are no longer open, so cancels mostly hit open ones.
        const stillOpen = new Set(
          c.orders.filter((o) => o.user_id === userId && o.status === 'open').map((o) => o.id),
        );
        openOf.set(
          userId,
          list.filter((id) => stillOpen.has(id)),
        );
      }
    };

    /**
     * The database goes away under load and comes back, the server running on: commands are
     * answered 503 in the interface's shape meanwhile and /readyz says why; then, with no restart,
     * commands are acknowledged again. The load stops, and the committed state is checked, and
     * the books the RUNNING server serves must hash to the committed ones (its engine was
     * rebuilt from the database after the failed commit, whatever that commit's fate).
     */
    const runOutage = async (live: ServerProcess, round: number, kind: OutageKind): Promise<void> => {
      const issue = issuer(live, round, true);
      const outcomes = { ack: 0, unavailable: 0, ackedAfter: 0 };
      let over = false;
      let stopping = false;
      const worker = async (random: () => number) => {
        while (!stopping) {
          const outcome = await issue(random);
          if (outcome === 'unavailable') outcomes.unavailable++;
          if (outcome === 'ack' && over) outcomes.ackedAfter++;
        }
      };
      // Client indexes 512+: streams of their own, apart from the kill phase's.
      const workers = Array.from({ length: concurrency }, (_, i) => worker(streamOf(round, 512 + i)));
      let polling = true;
      let notReady = 0;
      const poller = (async () => {
        while (polling) {
          const r = await request(`${live.url}/readyz`, { method: 'GET', timeoutMs: 5000 });
          if (r !== undefined && r.status === 503) {
            notReady++;
            readyzSeen.add(r.text);
          }
          await sleep(25);
        }
      })();
      await sleep(200 + Math.floor(random() * 600));
      const t0 = Date.now();
      await crashStore.outage(kind, options.outages?.blockMs ?? 1500);
      const outageMs = Date.now() - t0;
      over = true;
      outagesDone++;
      // Recovery without a restart: acknowledgements again, within the probe's reach.
      const deadline = Date.now() + 30_000;
      while (outcomes.ackedAfter < 10 && Date.now() < deadline) await sleep(25);
      stopping = true;
      await Promise.all(workers);
      polling = false;
      await poller;
      failOnUnexpected();
      if (live.child.exitCode !== null || live.child.signalCode !== null)
        throw new Error(`the server died during the database outage:\n${live.recentOutput()}`);
      if (outcomes.ackedAfter < 10)
        throw new Error(
          `outage ${outagesDone} (${kind}): commands were not acknowledged again within 30 s:\n${live.recentOutput()}`,
        );
      if (outcomes.unavailable === 0)
        throw new Error(
          `outage ${outagesDone} (${kind}): no command was answered 503 while the database was away`,
        );
      if (notReady === 0) throw new Error(`outage ${outagesDone} (${kind}): /readyz never reported it`);
      for (const body of readyzSeen) {
        const parsed = JSON.parse(body) as { status?: unknown; reason?: unknown };
        if (
          parsed.status !== 'store unavailable' ||
          typeof parsed.reason !== 'string' ||
          parsed.reason === ''
        )
          throw new Error(`/readyz during the outage: ${body} (expected a status and a reason)`);
      }
      const t1 = Date.now();
      const c = await crashStore.read();
      const hash = checkCommitted(c, `after database outage ${outagesDone} (${kind})`);
      await checkServed(live, c, hash, traders, allMarkets, places, cancels, round);
      forgetClosed(c);
      const roundPlaces = [...places.values()].filter((p) => p.round === round);
      log(
        `outage ${outagesDone} (${kind}) in round ${round}: the database was away ${outageMs} ms; ` +
          `${outcomes.unavailable} commands answered 503, /readyz 503 ${notReady} times, ` +
          `${roundPlaces.filter((p) => p.outcome === 'unavailable' && p.committed === true).length} of the 503 placements committed; ` +
          `${outcomes.ackedAfter} acknowledged after it, no restart; books ${hash.slice(0, 12)} = served by the running server ` +
          `(checks ${Date.now() - t1} ms)`,
      );
    };

    for (let round = 1; round <= options.kills; round++) {
      if (outageRounds.has(round)) await runOutage(server, round, options.outages!.kind);
      const live: ServerProcess = server;
      const issue = issuer(live, round, false);
      let stopping = false;
      const worker = async (random: () => number) => {
        while (!stopping) await issue(random);
      };
      const loadMs = minLoad + random() * (maxLoad - minLoad);
      const workers = Array.from({ length: concurrency }, (_, i) => worker(streamOf(round, i)));
      await sleep(loadMs);
      stopping = true;
      // The clients are slower than the server, so at a random instant the server is often idle,
      // waiting for them. A burst sent just before the kill, with a random 0-19 ms head start,
      // makes the kill land while requests are being read, applied, committed or answered.
      const burst = Array.from({ length: 32 }, (_, i) => issue(streamOf(round, concurrency + i)));
      await sleep(Math.floor(random() * 20));
      if (live.child.exitCode !== null || live.child.signalCode !== null)
        throw new Error(`the server died before the kill:\n${live.recentOutput()}`);
      await live.kill();
      await Promise.all(burst);
      const { signal } = await live.exited;
      if (signal !== 'SIGKILL') throw new Error(`the server ended with ${signal}, not SIGKILL`);
      await Promise.all(workers);
      failOnUnexpected();

      const t0 = Date.now();
      // On PostgreSQL the dead server's sessions may still be finishing a commit: wait them out,
      // so what is read is final (and the restarted server finds the writer lock free).
      await crashStore.settle();
      committed = await crashStore.read();
      const committedHash = checkCommitted(committed, `after kill ${round}`);
      const t1 = Date.now();
      server = await start();
      const t2 = Date.now();
      await checkServed(server, committed, committedHash, traders, allMarkets, places, cancels, round);
      const t3 = Date.now();
      const roundPlaces = [...places.values()].filter((p) => p.round === round);
      log(
        `kill ${round}/${options.kills} after ${Math.round(loadMs)} ms: ${roundPlaces.length} placements ` +
          `(${count(roundPlaces, 'ack')} acked, ${count(roundPlaces, 'unanswered')} unanswered of which ` +
          `${roundPlaces.filter((p) => p.outcome === 'unanswered' && p.committed === true).length} committed), ` +
          `${cancels.filter((c) => c.round === round).length} cancels; store: ${committed.orders.length} orders, ` +
          `${committed.trades.length} trades; books ${committedHash.slice(0, 12)} = served ` +
          `(store checks ${t1 - t0} ms, restart ${t2 - t1} ms, served checks ${t3 - t2} ms)`,
      );
      forgetClosed(committed);
    }

    // A graceful stop at the end must also leave a consistent store with the same books.
    const before = bookHash(committedBooks(committed ?? (await crashStore.read())));
    const stopped = await server.stop();
    if (stopped.code !== 0) throw new Error(`graceful stop exited with ${stopped.code}/${stopped.signal}`);
    server = undefined;
    await crashStore.settle();
    committed = await crashStore.read();
    if (checkCommitted(committed, 'after the final stop') !== before)
      throw new Error('the books changed across the final stop');

    const all = [...places.values()];
    const committedOf = (records: readonly (PlaceRecord | CancelRecord)[], outcome: Outcome) =>
      records.filter((r) => r.outcome === outcome && r.committed === true).length;
    return {
      store: storeKind,
      kills: options.kills,
      outages: outagesDone,
      seed: options.seed,
      requests: all.length + cancels.length,
      ackedOrders: count(all, 'ack'),
      ackedCancels: count(cancels, 'ack'),
      ackedControls: {
        amend: count(
          controls.filter((r) => r.kind === 'amend'),
          'ack',
        ),
        cancelAll: count(
          controls.filter((r) => r.kind === 'cancelAll'),
          'ack',
        ),
        switch: count(
          controls.filter((r) => r.kind === 'switch'),
          'ack',
        ),
      },
      refused: refusals([...all, ...cancels]),
      unanswered: { placements: count(all, 'unanswered'), cancels: count(cancels, 'unanswered') },
      unansweredCommitted: {
        placements: committedOf(all, 'unanswered'),
        cancels: committedOf(cancels, 'unanswered'),
      },
      unavailable: { placements: count(all, 'unavailable'), cancels: count(cancels, 'unavailable') },
      unavailableCommitted: {
        placements: committedOf(all, 'unavailable'),
        cancels: committedOf(cancels, 'unavailable'),
      },
      readyzDuringOutages: [...readyzSeen],
      orders: committed.orders.length,
      trades: committed.trades.length,
      conditional: {
        acked: all.filter((p) => p.conditional !== undefined && p.outcome === 'ack').length,
        triggered: committed.orders.filter((o) => isConditional(o.type) && isTriggered(o)).length,
      },
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
  } finally {
    if (server !== undefined) await server.kill();
    await store?.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
function refusals(records: readonly (PlaceRecord | CancelRecord)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) {
    if (r.outcome !== 'refused') continue;
    const k = `${r.kind} ${r.status}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

const count = (records: readonly { outcome: Outcome }[], outcome: Outcome): number =>
  records.filter((r) => r.outcome === outcome).length;

/**
 * What the clients were told against what the store holds (also the cluster failover test's check,
 * test/cluster-failover.test.ts, with every record in round 1).
 */
export function checkAcks(
  c: Committed,
  places: Map<number, PlaceRecord>,
  cancels: readonly CancelRecord[],
): string[] {
  const problems: string[] = [];
  const fail = (text: string) => {
    if (problems.length < 50) problems.push(text);
  };
  const byId = new Map(c.orders.map((o) => [o.id, o]));
  const storedTags = new Set<number>();
  for (const o of c.orders) {
    const tag = o.volume % TAG_SPACE;
    const p = places.get(tag);
    if (storedTags.has(tag)) fail(`order ${o.id}: request ${tag} was applied twice`);
    storedTags.add(tag);
    if (p === undefined) {
      fail(`order ${o.id} matches no request (tag ${tag})`);
      continue;
    }
    const sent = [p.trader.userId, p.market.id, p.side, p.type, p.price, p.volume].join();
    const stored = [o.user_id, o.market_id, o.side, o.type, o.price, o.volume].join();
    if (sent !== stored) fail(`order ${o.id}: stored ${stored}, sent ${sent}`);
    if (p.outcome === 'ack' && p.orderId !== o.id) fail(`order ${o.id}: acknowledged as ${p.orderId}`);
    if (p.outcome === 'refused' || p.outcome === 'pending')
      fail(`order ${o.id}: stored, but its request was ${p.outcome} (${p.status})`);
    if (inDoubt(p.outcome)) {
      if (p.committed === false) fail(`order ${o.id}: appeared after an earlier check found it absent`);
      p.committed = true;
    }
  }
  for (const p of places.values()) {
    if (storedTags.has(p.tag)) continue;
    if (p.outcome === 'ack') fail(`acknowledged order ${p.orderId} (tag ${p.tag}) is missing`);
    if (inDoubt(p.outcome)) {
      if (p.committed === true) fail(`${p.outcome} placement ${p.tag} was committed, and is gone now`);
      p.committed = false;
    }
  }
  const cancelsOf = new Map<number, CancelRecord[]>();
  for (const r of cancels) {
    const list = cancelsOf.get(r.orderId) ?? [];
    list.push(r);
    cancelsOf.set(r.orderId, list);
    const o = byId.get(r.orderId);
    const userCanceled = o !== undefined && o.status === 'canceled' && o.reason === USER_CANCEL_REASON;
    if (r.outcome === 'ack' && !userCanceled)
      fail(
        `acknowledged cancel of ${r.orderId}: the order is ${o?.status ?? 'missing'} (${o?.reason ?? ''})`,
      );
    if (inDoubt(r.outcome)) {
      if (r.committed === true && !userCanceled)
        fail(`${r.outcome} cancel of ${r.orderId} was committed, and is gone now`);
      r.committed ??= userCanceled;
    }
  }
  for (const [orderId, list] of cancelsOf) {
    // An unanswered cancel found not applied must stay so, unless a later request canceled the order.
    const o = byId.get(orderId);
    const userCanceled = o !== undefined && o.status === 'canceled' && o.reason === USER_CANCEL_REASON;
    const last = list[list.length - 1]!;
    if (userCanceled && list.length === 1 && inDoubt(last.outcome) && last.committed === false)
      fail(`${last.outcome} cancel of ${orderId} appeared after a check had found it not applied`);
  }
  for (const o of c.orders) {
    if (o.status !== 'canceled' || o.reason !== USER_CANCEL_REASON) continue;
    const requests = cancelsOf.get(o.id) ?? [];
    if (!requests.some((r) => r.outcome === 'ack' || inDoubt(r.outcome)))
      fail(`order ${o.id} was canceled by its user, but no cancel of it was acknowledged or left in doubt`);
  }
  return problems;
}

/** The restarted server against the committed state of the file it was started on. */
async function checkServed(
  server: ServerProcess,
  c: Committed,
  committedHash: string,
  traders: readonly Trader[],
  markets: readonly MarketInfo[],
  places: Map<number, PlaceRecord>,
  cancels: readonly CancelRecord[],
  round: number,
): Promise<void> {
  const ready = await request(`${server.url}/readyz`, { method: 'GET' });
  if (ready?.status !== 200)
    throw new Error(`readyz after restart ${round}: ${ready?.status} ${ready?.text}`);
  const check = await admin(server.url, 'GET', '/ledger/check');
  if ((check.body as { ok?: boolean }).ok !== true)
    throw new Error(`ledger check after restart ${round}: ${JSON.stringify(check.body)}`);
  const state = (await admin(server.url, 'GET', '/engine/state')).body as {
    state_hash?: string;
    ok?: boolean;
    violation?: string | null;
  };
  if (state.ok !== true) throw new Error(`engine state after restart ${round}: ${JSON.stringify(state)}`);
  if (state.state_hash !== c.stateHash)
    throw new Error(
      `after restart ${round} the server's engine (hash ${state.state_hash}) differs from a restore of the committed state (${c.stateHash})`,
    );

  const served = await servedBooks(server.url, traders, markets);
  const servedHash = bookHash(served);
  if (servedHash !== committedHash)
    throw new Error(
      `after restart ${round} the served books differ from the committed ones:\n${describeDifference(committedBooks(c), served)}`,
    );

  const byId = new Map(c.orders.map((o) => [o.id, o]));
  const acked: { trader: Trader; orderId: number; canceled: boolean }[] = [];
  for (const p of places.values())
    if (p.round === round && p.outcome === 'ack')
      acked.push({ trader: p.trader, orderId: p.orderId!, canceled: false });
  for (const r of cancels)
    if (r.round === round && r.outcome === 'ack')
      acked.push({ trader: r.trader, orderId: r.orderId, canceled: true });
  const problems = (
    await mapLimit(acked, 16, async ({ trader, orderId, canceled }) => {
      const answer = await signed(server.url, trader, 'GET', `/orders/${orderId}`);
      if (answer?.status !== 200)
        return `GET /v1/orders/${orderId}: ${answer?.status} ${answer?.text ?? 'no answer'}`;
      const order = (JSON.parse(answer.text) as { data: ServedOrder }).data;
      const stored = byId.get(orderId)!;
      const market = markets.find((m) => m.id === stored.market_id)!;
      if (
        order.status !== stored.status ||
        toUnits(order.volume_executed.amount, market.lotDecimals) !== BigInt(stored.executed)
      )
        return `order ${orderId} served as ${order.status}/${order.volume_executed.amount}, committed ${stored.status}/${stored.executed}`;
      if (canceled && order.status !== 'canceled')
        return `acknowledged cancel of ${orderId}: served as ${order.status}`;
      return undefined;
    })
  ).filter((p) => p !== undefined);
  if (problems.length > 0) throw new Error(`after restart ${round}:\n${problems.slice(0, 20).join('\n')}`);
}

interface ServedOrder {
  id: number;
  user_id: number;
  status: string;
  type: 'buy' | 'sell';
  pair: string;
  order_type: string;
  trigger_conditions: string;
  limit_price: { amount: string } | null;
  description: { price: string };
  volume: { amount: string };
  volume_executed: { amount: string };
}

/** The books as the server serves them: full-depth levels per market and every user's open orders. */
export async function servedBooks(
  base: string,
  traders: readonly Trader[],
  markets: readonly MarketInfo[],
): Promise<MarketBook[]> {
  const open: ServedOrder[] = [];
  for (const trader of traders) {
    const answer = await signed(base, trader, 'GET', '/open-orders');
    if (answer?.status !== 200) throw new Error(`open-orders: ${answer?.status} ${answer?.text}`);
    open.push(...(JSON.parse(answer.text) as { data: ServedOrder[] }).data);
  }
  const books: MarketBook[] = [];
  for (const m of markets) {
    const answer = await request(`${base}/v1/orderbook?ticker_id=${encodeURIComponent(m.pair)}&depth=0`, {
      method: 'GET',
    });
    if (answer?.status !== 200) throw new Error(`orderbook ${m.pair}: ${answer?.status} ${answer?.text}`);
    const [book] = JSON.parse(answer.text) as { bids: [string, string][]; asks: [string, string][] }[];
    const levels = (list: [string, string][]) =>
      list.map(([p, v]) => [toUnits(p, m.pairDecimals), toUnits(v, m.lotDecimals)] as const);
    // A waiting conditional order is open but not in the book; a fired -limit one rests at its
    // limit price (its record's `price` is the trigger, decision E33).
    const fired = (o: ServedOrder) => o.trigger_conditions.startsWith('triggered');
    const orders: QueuedOrder[] = open
      .filter((o) => o.pair === `${m.base}${m.quote}`)
      .filter((o) => !isConditional(o.order_type) || fired(o))
      .map((o) => ({
        id: o.id,
        userId: o.user_id,
        side: o.type,
        price: toUnits(o.limit_price?.amount ?? o.description.price, m.pairDecimals),
        remaining: toUnits(o.volume.amount, m.lotDecimals) - toUnits(o.volume_executed.amount, m.lotDecimals),
      }));
    books.push(bookFromParts(m.pair, levels(book!.bids), levels(book!.asks), orders));
  }
  return books;
}

/**
 * The order controls against the committed state: every stored order carries the client id and
 * GTD expiry it was placed with, or the client id of an amend of it that was acknowledged (or left
 * in doubt); orders canceled by a cancel-all are at least as many as the acknowledged cancel-alls
 * said, and none without such a request; an acknowledged dead man's switch is committed with a
 * deadline at or after the last one acknowledged, and none is armed without a request.
 */
export function checkControls(
  c: Committed,
  places: Map<number, PlaceRecord>,
  controls: readonly ControlRecord[],
): string[] {
  const problems: string[] = [];
  const fail = (text: string) => {
    if (problems.length < 50) problems.push(text);
  };
  const amendsOf = new Map<number, Extract<ControlRecord, { kind: 'amend' }>[]>();
  for (const r of controls)
    if (r.kind === 'amend') amendsOf.set(r.orderId, [...(amendsOf.get(r.orderId) ?? []), r]);
  for (const o of c.orders) {
    const p = places.get(o.volume % TAG_SPACE);
    if (p === undefined) continue; // checkAcks reports it
    const expire = p.expireSeconds === undefined ? 0 : p.expireSeconds * 1_000_000;
    if (o.expire_time !== expire || o.time_in_force !== (p.expireSeconds === undefined ? 'GTC' : 'GTD'))
      fail(
        `order ${o.id}: stored ${o.time_in_force} expiring ${o.expire_time}, sent ${p.expireSeconds ?? 'GTC'}`,
      );
    const amends = amendsOf.get(o.id) ?? [];
    const acked = amends.filter((a) => a.outcome === 'ack').map((a) => a.clientOrderId);
    const doubtful = amends.filter((a) => inDoubt(a.outcome)).map((a) => a.clientOrderId);
    const allowed = new Set([...(acked.length > 0 ? acked : [p.clientOrderId ?? null]), ...doubtful]);
    if (!allowed.has(o.client_order_id))
      fail(`order ${o.id}: client id ${o.client_order_id}, expected one of ${[...allowed].join(', ')}`);
  }
  const users = new Set(controls.map((r) => r.trader.userId));
  for (const o of c.orders) users.add(o.user_id);
  for (const userId of users) {
    const mine = controls.filter((r) => r.trader.userId === userId);
    const cancelAlls = mine.filter((r) => r.kind === 'cancelAll');
    const stored = c.orders.filter((o) => o.user_id === userId && o.reason === CANCEL_ALL_REASON).length;
    const acked = cancelAlls.reduce((n, r) => n + (r.outcome === 'ack' ? (r.canceled ?? 0) : 0), 0);
    if (stored < acked)
      fail(`user ${userId}: ${stored} orders canceled by cancel-all, ${acked} acknowledged`);
    if (stored > 0 && !cancelAlls.some((r) => r.outcome === 'ack' || inDoubt(r.outcome)))
      fail(`user ${userId}: ${stored} orders canceled by a cancel-all nobody sent`);
    const switches = mine.filter((r) => r.kind === 'switch');
    const row = c.switches.find((w) => w.user_id === userId);
    const lastAcked = Math.max(0, ...switches.map((r) => (r.outcome === 'ack' ? (r.trigger ?? 0) : 0)));
    if (lastAcked > 0 && (row === undefined || Math.floor(row.trigger_time / 100) < lastAcked))
      fail(
        `user ${userId}: switch acknowledged until ${lastAcked} (100 µs), committed ${row?.trigger_time ?? 'none'}`,
      );
    if (row !== undefined && !switches.some((r) => r.outcome === 'ack' || inDoubt(r.outcome)))
      fail(`user ${userId}: a switch is armed that nobody armed`);
  }
  return problems;
}
