/**
 * A complete exchange started inside a bot's own test suite: the real server (the same
 * composition as `npm start`, through startServer) on a free loopback port, in memory by default,
 * with funded accounts and admin helpers. Like an in-memory database server started for a test:
 * `close()` leaves no open handle and no file behind.
 *
 * Every change the helpers make goes through the admin API or the signed public API, so the
 * ledger rules hold as in production: a balance is "set" by a deposit or a withdrawal of the
 * difference, never written directly.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { OpenSpotClient } from '../client/client.js';
import { formatUnits, parseUnits } from '../client/decimal.js';
import type { Side } from '../client/types.js';
import { loadConfig } from '../config/config.js';
import type { CatalogueFile } from '../config/default-catalogue.js';
import { createLogger } from '../logger.js';
import { keepInitialState } from '../sequencer/initial-state.js';
import { type RunningServer, startServer } from '../server.js';
import { demoBalances } from '../simulator/demo.js';
import { type VenueChaos, venueChaos } from './chaos.js';

export type { CatalogueFile } from '../config/default-catalogue.js';

export interface TestAccountSpec {
  /**
   * A label: letters, digits, '.', '_', '-'; also the user's e-mail (`<name>@test-venue.local`), so
   * unique. Default `trader-<n>`.
   */
  readonly name?: string;
  /** Asset code → decimal amount deposited at start. Default: the demo account's funds in every asset. */
  readonly balances?: Readonly<Record<string, string>>;
  /** Default `['read', 'trade']`. */
  readonly scopes?: ReadonlyArray<'read' | 'trade'>;
}

export interface TestVenueSimulatorOptions {
  /** Simulator actions per second over all markets. Default 20. */
  readonly ratePerSecond?: number;
  /** The simulator's random seed. Default 1. */
  readonly seed?: number;
  /** Centre of the random walk by slash pair, for markets outside the default catalogue. */
  readonly referencePrices?: Readonly<Record<string, string>>;
}

export interface TestVenueOptions {
  /** Default 0: a free port chosen by the system. */
  readonly port?: number;
  /**
   * Where the state lives. Default: in memory (nothing is written to disk). `true`: a new
   * temporary directory that close() removes. A path: that directory, kept after close() (a second
   * venue started on it finds the same state).
   */
  readonly dataDir?: string | true;
  /** Assets and markets, in the admin API's input shape. Default: the default catalogue. */
  readonly catalogue?: CatalogueFile;
  /** How many funded accounts, or each one's description. Default 1 (funded like the demo account). */
  readonly accounts?: number | readonly TestAccountSpec[];
  /** Run the market simulator (makers and takers trading over the public API). Default off. */
  readonly simulator?: boolean | TestVenueSimulatorOptions;
  /**
   * Any other configuration variable of `npm start` (README), e.g. `{ RATE_LIMIT_KEY_PER_SECOND: '5' }`.
   * The venue's own defaults: rate limits off, LOG_LEVEL silent (logs go to stderr).
   */
  readonly env?: Readonly<Record<string, string>>;
}

export interface TestAccount {
  readonly name: string;
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

/** Options for `new Pusher(ws.key, ws)` (pusher-js 8). */
export interface PusherSettings {
  /** The application key: the first argument of `new Pusher`. */
  readonly key: string;
  readonly wsHost: string;
  readonly wsPort: number;
  readonly wssPort: number;
  readonly forceTLS: false;
  readonly enabledTransports: ['ws'];
  /** pusher-js 8 requires a cluster even when wsHost decides where to connect. */
  readonly cluster: string;
  readonly disableStats: true;
  /**
   * POST /v1/broadcasting/auth. It takes a signed JSON body, not pusher-js's default form post:
   * private channels need a `channelAuthorization.customHandler` (as `connectRealtime` of
   * `openspot/client/realtime` does with an OpenSpotClient).
   */
  readonly authEndpoint: string;
}

/** A saved checkpoint, as the admin API reports it. */
export interface VenueCheckpoint {
  readonly name: string;
  /** ISO 8601. */
  readonly created_at: string;
  readonly bytes: number;
  /** True when it replaced a checkpoint of the same name. */
  readonly replaced: boolean;
}

/** A user's balance of one asset, as the admin API reports it. */
export interface VenueBalance {
  readonly asset: string;
  readonly available: string;
  readonly reserved: string;
  readonly total: string;
}

/** GET /admin/v1/ledger/check: per asset, balances + fees = net deposits. */
export interface LedgerCheck {
  readonly ok: boolean;
  readonly assets: ReadonlyArray<{
    readonly asset: string;
    readonly balances: string;
    readonly fees: string;
    readonly net_deposits: string;
    readonly difference: string;
    readonly negative_balances: number;
    readonly ok: boolean;
  }>;
}

export interface RestingOrderParams {
  /** `BTC/EUR` or `BTCEUR`. */
  readonly pair: string;
  readonly direction: Side;
  readonly price: string;
  readonly volume: string;
}

export interface RestingOrder {
  readonly id: number;
  /** The market maker that owns it (created on first use, funded for each order it places). */
  readonly maker: TestAccount;
}

/** A user: its id or an account of the venue. */
export type UserRef = number | Pick<TestAccount, 'userId'>;

export interface VenueAdmin {
  /** The admin API's base URL (…/admin/v1) and its bearer token, for callers in other languages. */
  readonly url: string;
  readonly token: string;
  /** Any admin API call; answers `{status, body}` without throwing on a 4xx. */
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** A new user with an API key, funded as described (default: like the demo account). */
  createAccount(spec?: TestAccountSpec): Promise<TestAccount>;
  balances(user: UserRef): Promise<VenueBalance[]>;
  /** Idempotent per reference (a repeated reference changes nothing). Answers the new balance. */
  deposit(user: UserRef, asset: string, amount: string, reference?: string): Promise<VenueBalance>;
  withdraw(user: UserRef, asset: string, amount: string, reference?: string): Promise<VenueBalance>;
  /**
   * Makes the user's total balance of the asset (available + reserved) equal `amount`, by a
   * deposit or a withdrawal of the difference (reference `venue-set-balance-…`). A target below
   * what open orders reserve is refused: cancel them first.
   */
  setBalance(user: UserRef, asset: string, amount: string): Promise<VenueBalance>;
  /** A limit order placed through the signed API by another user, the venue's market maker. */
  placeRestingOrder(params: RestingOrderParams): Promise<RestingOrder>;
  ledgerCheck(): Promise<LedgerCheck>;
}

export interface TestVenue {
  /** The origin, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** The interface's `{base_url}`: `url` + `/v1`. */
  readonly baseUrl: string;
  readonly ws: PusherSettings;
  readonly accounts: readonly TestAccount[];
  readonly admin: VenueAdmin;
  /** Fault injection: latency, errors, timeouts, dropped book updates, disconnects (docs/chaos.md). */
  readonly chaos: VenueChaos;
  /** The data directory, or undefined in memory. */
  readonly dataDir: string | undefined;
  /** The running server, for what the helpers do not cover. */
  readonly server: RunningServer;
  /** An OpenSpotClient signed with an account's key: an account, its index (default 0). */
  client(account?: TestAccount | number): OpenSpotClient;
  /**
   * Saves the whole venue state (books, balances, orders, trades, candles, deposits) as checkpoint
   * `name`, replacing one of that name. In memory, checkpoints are kept in memory; with a data
   * directory, in `DATA_DIR/checkpoints/NAME.db`. Names: letters, digits, '.', '_', '-'.
   */
  checkpoint(name: string): Promise<VenueCheckpoint>;
  /**
   * Brings the saved state back while the venue runs, and answers the ledger check of the
   * restored state. Accounts and API keys are not rolled back: every key keeps working.
   * WebSocket clients are disconnected (4200, pusher-js reconnects at once) and each
   * subscription starts again with a snapshot.
   */
  restore(name: string): Promise<LedgerCheck>;
  /** Back to the state right after startTestVenue: the catalogue, and the accounts funded as at start. */
  reset(): Promise<LedgerCheck>;
  /** Stops the server and removes what the venue created; safe to call twice. */
  close(): Promise<void>;
}

/** Thrown when an admin call made by a helper is refused; carries the admin API's answer. */
export class TestVenueError extends Error {
  override readonly name = 'TestVenueError';
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}

const DEFAULT_SIMULATOR_RATE = 20;

export async function startTestVenue(options: TestVenueOptions = {}): Promise<TestVenue> {
  const temporary = options.dataDir === true ? mkdtempSync(join(tmpdir(), 'openspot-venue-')) : undefined;
  const dataDir = temporary ?? (typeof options.dataDir === 'string' ? resolve(options.dataDir) : undefined);
  const simulator =
    options.simulator === undefined || options.simulator === false
      ? undefined
      : options.simulator === true
        ? {}
        : options.simulator;
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: String(options.port ?? 0),
    // In memory the server writes nothing (ServerOptions.inMemory); DATA_DIR is then never used.
    DATA_DIR: dataDir ?? join(tmpdir(), 'openspot-venue-in-memory'),
    LOG_LEVEL: 'silent',
    DEMO: 'off',
    SIMULATOR: simulator === undefined ? 'off' : 'on',
    SIMULATOR_RATE: String(simulator?.ratePerSecond ?? DEFAULT_SIMULATOR_RATE),
    SIMULATOR_SEED: String(simulator?.seed ?? 1),
    // A test suite sends far more than one client would; a test that wants limits sets them.
    RATE_LIMIT_IP_PER_SECOND: '0',
    RATE_LIMIT_KEY_PER_SECOND: '0',
    WS_MAX_FRAMES_PER_SECOND: '0',
    WS_MAX_CONNECTIONS_PER_IP: '0',
    WS_UPGRADES_PER_SECOND_PER_IP: '0',
    // Nothing to lose on a power cut in a test: skip the fsync per commit.
    SQLITE_SYNCHRONOUS: 'normal',
    WS_APP_KEY: 'openspot-key',
    WS_APP_SECRET: randomBytes(24).toString('base64url'),
    // In memory there are no files to keep these in; on disk the server keeps its own.
    ...(dataDir === undefined
      ? {
          ADMIN_TOKEN: randomBytes(24).toString('base64url'),
          SECRETS_KEY: randomBytes(32).toString('base64'),
        }
      : {}),
    ...options.env,
  };
  let server: RunningServer;
  let appKey: string;
  try {
    const config = loadConfig(env);
    appKey = config.ws.appKey;
    server = await startServer(config, createLogger(config.logLevel, process.stderr), env, {
      inMemory: dataDir === undefined,
      ...(options.catalogue === undefined ? {} : { catalogue: options.catalogue }),
      ...(simulator?.referencePrices === undefined ? {} : { referencePrices: simulator.referencePrices }),
    });
  } catch (error) {
    if (temporary !== undefined) rmSync(temporary, { recursive: true, force: true });
    throw error;
  }

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      await server.close();
      if (temporary !== undefined) rmSync(temporary, { recursive: true, force: true });
    })();
    return closed;
  };

  try {
    const url = server.url;
    const baseUrl = `${url}/v1`;
    const admin = new Admin(server, baseUrl);
    const specs =
      typeof options.accounts === 'number' || options.accounts === undefined
        ? Array.from({ length: options.accounts ?? 1 }, (): TestAccountSpec => ({}))
        : options.accounts;
    const accounts: TestAccount[] = [];
    for (const [index, spec] of specs.entries())
      accounts.push(await admin.createAccount({ name: `trader-${index + 1}`, ...spec }));
    // A fresh store: reset() goes back to it with the accounts funded, not to the bare catalogue.
    if (server.initialCheckpoint) await keepInitialState(server.exchange, { replace: true });
    const restoreAnswer = async (path: string): Promise<LedgerCheck> =>
      ((await admin.call('POST', path)) as { ledger: LedgerCheck }).ledger;
    const port = Number(new URL(url).port);
    const host = new URL(url).hostname;
    const venue: TestVenue = {
      url,
      baseUrl,
      ws: {
        key: appKey,
        wsHost: host,
        wsPort: port,
        wssPort: port,
        forceTLS: false,
        enabledTransports: ['ws'],
        cluster: '',
        disableStats: true,
        authEndpoint: `${baseUrl}/broadcasting/auth`,
      },
      accounts,
      admin,
      chaos: venueChaos((method, path, body) => admin.call(method, path, body)),
      dataDir,
      server,
      client(account = 0) {
        const chosen = typeof account === 'number' ? accounts[account] : account;
        if (chosen === undefined) throw new RangeError(`the venue has no account ${String(account)}`);
        return new OpenSpotClient({ baseUrl, apiKey: chosen.apiKey, apiSecret: chosen.apiSecret });
      },
      async checkpoint(name) {
        return (await admin.call('POST', '/checkpoints', { name })) as VenueCheckpoint;
      },
      restore: (name) => restoreAnswer(`/checkpoints/${encodeURIComponent(name)}/restore`),
      reset: () => restoreAnswer('/reset'),
      close,
    };
    return venue;
  } catch (error) {
    await close();
    throw error;
  }
}

const userIdOf = (user: UserRef): number => (typeof user === 'number' ? user : user.userId);

class Admin implements VenueAdmin {
  readonly url: string;
  readonly token: string;
  #maker: Promise<TestAccount> | undefined;

  constructor(
    private readonly server: RunningServer,
    private readonly baseUrl: string,
  ) {
    this.url = `${server.url}/admin/v1`;
    this.token = server.adminToken;
  }

  // In-process (no socket): the admin routes, their validation and the command path run as over HTTP.
  async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const response = await this.server.app.inject({
      method: method as 'GET',
      url: `/admin/v1${path}`,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: response.statusCode,
      body: response.body === '' ? null : (JSON.parse(response.body) as unknown),
    };
  }

  /** `request`, throwing a TestVenueError unless the answer is 2xx. */
  call(method: string, path: string, body?: unknown): Promise<unknown> {
    return this.#call(method, path, body);
  }

  async #call(method: string, path: string, body?: unknown): Promise<unknown> {
    const answer = await this.request(method, path, body);
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    const error = (answer.body as { error?: { message?: string; field?: string } } | null)?.error;
    const field = error?.field === undefined ? '' : ` (${error.field})`;
    throw new TestVenueError(
      `admin ${method} ${path} answered ${answer.status}: ${error?.message ?? JSON.stringify(answer.body)}${field}`,
      answer.status,
      answer.body,
    );
  }

  async createAccount(spec: TestAccountSpec = {}): Promise<TestAccount> {
    const name = spec.name ?? `account-${randomUUID().slice(0, 8)}`;
    // The name becomes the user's e-mail: say so here rather than let the admin API refuse an e-mail.
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name))
      throw new TestVenueError(
        `account name "${name}" may hold only letters, digits, '.', '_' and '-' (1 to 64).`,
        422,
        null,
      );
    const user = (await this.call('POST', '/users', { email: `${name}@test-venue.local` })) as {
      id: number;
    };
    const key = (await this.call('POST', `/users/${user.id}/api-keys`, {
      scopes: spec.scopes ?? ['read', 'trade'],
    })) as { api_key: string; api_secret: string };
    const balances = spec.balances ?? demoBalances(this.#assets());
    // Concurrent deposits share one commit (group commit): a funded account costs one transaction.
    await Promise.all(
      Object.entries(balances).map(([asset, amount]) =>
        this.deposit(user.id, asset, amount, `venue-initial-${user.id}-${asset}`),
      ),
    );
    return { name, userId: user.id, apiKey: key.api_key, apiSecret: key.api_secret };
  }

  #assets() {
    return this.server.exchange.catalogue.assets().map((a) => ({ code: a.code, type: a.type }));
  }

  async balances(user: UserRef): Promise<VenueBalance[]> {
    return ((await this.call('GET', `/users/${userIdOf(user)}/balances`)) as { data: VenueBalance[] }).data;
  }

  async deposit(user: UserRef, asset: string, amount: string, reference?: string): Promise<VenueBalance> {
    return this.#ledger('deposits', user, asset, amount, reference);
  }

  async withdraw(user: UserRef, asset: string, amount: string, reference?: string): Promise<VenueBalance> {
    return this.#ledger('withdrawals', user, asset, amount, reference);
  }

  async #ledger(
    path: 'deposits' | 'withdrawals',
    user: UserRef,
    asset: string,
    amount: string,
    reference: string | undefined,
  ): Promise<VenueBalance> {
    const body = { asset, amount, ...(reference === undefined ? {} : { reference }) };
    const answer = (await this.call('POST', `/users/${userIdOf(user)}/${path}`, body)) as {
      balance: VenueBalance;
    };
    return answer.balance;
  }

  async setBalance(user: UserRef, asset: string, amount: string): Promise<VenueBalance> {
    const spec = this.server.exchange.catalogue.asset(asset);
    if (spec === undefined) throw new TestVenueError(`setBalance: unknown asset ${asset}`, 422, null);
    let target: bigint;
    try {
      target = parseUnits(amount, spec.decimals);
    } catch (error) {
      throw new TestVenueError(`setBalance: ${(error as Error).message}`, 422, null);
    }
    const current = (await this.balances(user)).find((b) => b.asset === asset);
    const total = current === undefined ? 0n : parseUnits(current.total, spec.decimals);
    const reserved = current === undefined ? 0n : parseUnits(current.reserved, spec.decimals);
    if (target < reserved)
      throw new TestVenueError(
        `setBalance: ${amount} ${asset} is below the ${current?.reserved} reserved by open orders; cancel them first.`,
        422,
        null,
      );
    const reference = `venue-set-balance-${randomUUID()}`;
    if (target > total)
      return this.deposit(user, asset, formatUnits(target - total, spec.decimals), reference);
    if (target < total)
      return this.withdraw(user, asset, formatUnits(total - target, spec.decimals), reference);
    const zero = formatUnits(0n, spec.decimals);
    return current ?? { asset, available: zero, reserved: zero, total: zero };
  }

  async placeRestingOrder(params: RestingOrderParams): Promise<RestingOrder> {
    const market = this.server.exchange.catalogue.marketByName(params.pair.trim());
    if (market === undefined)
      throw new TestVenueError(`placeRestingOrder: unknown pair ${params.pair}`, 422, null);
    this.#maker ??= this.createAccount({ name: `venue-maker-${randomUUID().slice(0, 8)}`, balances: {} });
    const maker = await this.#maker;
    // Fund exactly what this order can reserve, and more: a buy's fee is at most its cost.
    const funding = this.#funding(market, params);
    if (funding !== undefined) await this.deposit(maker, funding.asset, funding.amount);
    const client = new OpenSpotClient({
      baseUrl: this.baseUrl,
      apiKey: maker.apiKey,
      apiSecret: maker.apiSecret,
    });
    const created = await client.createOrder({
      pair: params.pair,
      direction: params.direction,
      type: 'limit',
      price: params.price,
      volume: params.volume,
    });
    if (created.id === undefined)
      throw new TestVenueError('placeRestingOrder: no order id in the answer', 500, null);
    return { id: created.id, maker };
  }

  /** What the maker needs for the order, or undefined when the input is malformed (the API then says why). */
  #funding(
    market: { base: string; quote: string; pairDecimals: number; lotDecimals: number },
    params: RestingOrderParams,
  ): { asset: string; amount: string } | undefined {
    const catalogue = this.server.exchange.catalogue;
    try {
      const volume = parseUnits(params.volume, market.lotDecimals);
      if (params.direction === 'sell')
        return { asset: market.base, amount: formatUnits(volume, market.lotDecimals) };
      const quoteDecimals = catalogue.asset(market.quote)?.decimals ?? 0;
      const cost = parseUnits(params.price, market.pairDecimals) * volume;
      const scale = market.pairDecimals + market.lotDecimals - quoteDecimals;
      const divisor = 10n ** BigInt(Math.max(scale, 0));
      const inQuote = scale >= 0 ? (cost + divisor - 1n) / divisor : cost * 10n ** BigInt(-scale);
      return { asset: market.quote, amount: formatUnits(inQuote * 2n, quoteDecimals) };
    } catch {
      return undefined;
    }
  }

  async ledgerCheck(): Promise<LedgerCheck> {
    return (await this.call('GET', '/ledger/check')) as LedgerCheck;
  }
}

/**
 * The venue as one JSON object (what `openspot test-venue --json` prints): field names of the
 * wire (snake_case); each account also carries `url`, so it is a CLI profile as it stands.
 */
export function testVenueInfo(venue: TestVenue) {
  return {
    url: venue.url,
    base_url: venue.baseUrl,
    ws: venue.ws,
    admin: { url: venue.admin.url, token: venue.admin.token },
    accounts: venue.accounts.map((a) => ({
      name: a.name,
      user_id: a.userId,
      api_key: a.apiKey,
      api_secret: a.apiSecret,
      url: venue.baseUrl,
    })),
    data_dir: venue.dataDir ?? null,
  };
}
