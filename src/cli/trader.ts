/**
 * Trader commands of `openspot`, over the signed /v1 interface through the public client:
 *
 *   markets                      the /v1/markets table (the operator's `markets list|create` stay)
 *   ticker [PAIR]                tickers
 *   book PAIR [--depth N] [--watch]
 *   balances                     the spot wallet
 *   order buy|sell PAIR VOLUME [--price P] [--type limit|market]
 *         [--stop P | --take-profit P [--limit L] | --trailing 2%|DISTANCE]
 *         [--ioc|--fok|--gtd TIME] [--post-only] [--client-id ID] [--stp MODE]
 *   orders [--closed] [--pair P] [--page-size N --page N] [--client-id ID]
 *   cancel ID | --client-id ID | --all [--pair P]
 *   amend ID [--price P] [--trigger P] [--volume V]
 *   dead-man SECONDS             the switch that cancels all open orders unless renewed (0: off)
 *   trades [--pair P] [--page-size N --page N]
 *
 * `--json` prints the server's answer as received (for scripts); tables otherwise. Credentials
 * and URL: see trader-config.ts.
 */
import { Argument, type Command, InvalidArgumentError, Option } from 'commander';
import { OpenSpotClient } from '../client/client.js';
import { OpenSpotApiError, OpenSpotTransportError } from '../client/errors.js';
import type { Side } from '../client/types.js';
import { URL_HINT } from './admin-client.js';
import { watchBook } from './book-watch.js';
import { table } from './table.js';
import { resolveTrader, type TraderTarget } from './trader-config.js';
import { balanceRows, marketRows, orderRows, restBookTable, tickerRows, tradeRows } from './trader-format.js';
import {
  describeSwitch,
  type OrderControlFlags,
  type OrderTypeFlags,
  orderControls,
  orderTypeFields,
  parseClientOrderId,
  parseExpiry,
  parseSwitchTimeout,
  parseTrailingOffset,
  STP_MODES,
} from './trader-orders.js';

type Globals = { url?: string; profile?: string; json?: boolean };

const positiveInt =
  (name: string) =>
  (value: string): number => {
    if (!/^\d{1,15}$/.test(value) || Number(value) < 1)
      throw new InvalidArgumentError(`${name} must be a positive whole number`);
    return Number(value);
  };

/** An API error as one readable text, with every field message of a validation error. */
function describe(error: OpenSpotApiError): string {
  const body = error.body;
  if (body !== undefined && 'errors' in body) {
    const details = Object.entries(body.errors).flatMap(([field, messages]) =>
      messages.map((m) => `  ${field}: ${m}`),
    );
    return [`${error.status}: ${body.message}`, ...details].join('\n');
  }
  return error.message;
}

export function registerTraderCommands(program: Command): void {
  program.option(
    '--profile <file>',
    'trader profile JSON {url, api_key, api_secret} (default ~/.config/openspot/profile.json)',
  );

  const globals = (): Globals => program.opts<Globals>();
  const target = (appKey?: string): TraderTarget => resolveTrader({ ...globals(), appKey });
  const client = (t: TraderTarget = target()) =>
    new OpenSpotClient({ baseUrl: t.baseUrl, apiKey: t.apiKey, apiSecret: t.apiSecret, nonce: t.nonce });
  /** A client for private endpoints: says how to configure credentials instead of a bare 422. */
  const signedClient = () => {
    const t = target();
    if (t.apiKey === undefined || t.apiSecret === undefined)
      throw new Error(
        'no API credentials: set OPENSPOT_API_KEY and OPENSPOT_API_SECRET, or use --profile FILE ' +
          '(JSON {url, api_key, api_secret}; the demo writes DATA_DIR/demo-credentials.json)',
      );
    return client(t);
  };

  const out = (text: string) => process.stdout.write(`${text}\n`);
  const print = (value: unknown, human: () => string) =>
    out(globals().json === true ? JSON.stringify(value, null, 2) : human());

  /** Runs an action; API errors leave as one readable Error for main.ts to print. */
  const run =
    <A extends unknown[]>(action: (...args: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      try {
        await action(...args);
      } catch (error) {
        if (error instanceof OpenSpotApiError) throw new Error(describe(error), { cause: error });
        // No answer at all (its message names the URL tried): say how to choose another one.
        if (error instanceof OpenSpotTransportError && error.cause !== undefined)
          throw new Error(`${error.message}. ${URL_HINT}`, { cause: error });
        throw error;
      }
    };

  /** The slash form the REST endpoints take; `BTCEUR` is looked up in /v1/markets. */
  const slashPair = async (c: OpenSpotClient, pair: string): Promise<string> => {
    if (pair.includes('/')) return pair;
    const markets = (await c.markets()).data;
    const found = markets[pair] ?? Object.values(markets).find((m) => m.altname === pair);
    return found?.wsname ?? pair;
  };

  // `markets` already exists for the operator (`markets list`, `markets create`): without a
  // subcommand it now shows the public /v1/markets table, so neither use shadows the other.
  const markets =
    program.commands.find((c) => c.name() === 'markets') ?? program.command('markets').description('markets');
  markets
    .description('markets: without a subcommand, the public /v1/markets table')
    .option('--pair <pair>', 'only this market')
    .action(
      run(async (o: { pair?: string }) => {
        const answer = await client().markets(o.pair);
        print(answer, () => table(marketRows(answer.data)));
      }),
    );

  program
    .command('ticker [pair]')
    .description('tickers: last price, best bid and ask, today’s high, low and volume')
    .action(
      run(async (pair?: string) => {
        const c = client();
        const answer = await c.tickers(pair === undefined ? undefined : await slashPair(c, pair));
        print(answer, () => table(tickerRows(answer)));
      }),
    );

  program
    .command('book <pair>')
    .description('order book; --watch shows it live over the WebSocket (Ctrl-C to quit)')
    .option('--depth <n>', 'levels per side (default 10)', positiveInt('--depth'))
    .option('--watch', 'live view, redrawn in place; with --json one JSON line per change')
    .option('--app-key <key>', 'WebSocket app key (default $OPENSPOT_WS_APP_KEY or openspot-key)')
    .action(
      run(async (pair: string, o: { depth?: number; watch?: boolean; appKey?: string }) => {
        const t = target(o.appKey);
        const c = client(t);
        const depth = o.depth ?? 10;
        const name = await slashPair(c, pair);
        if (o.watch === true) {
          await watchBook({
            client: c,
            pair: name,
            depth,
            appKey: t.wsAppKey,
            json: globals().json === true,
          });
          return;
        }
        // The interface's depth counts both sides together.
        const [book] = await c.orderbook({ tickerId: name, depth: depth * 2 });
        if (book === undefined) throw new Error(`no order book for ${name}`);
        print(book, () => restBookTable(book, depth));
      }),
    );

  program
    .command('balances')
    .description('spot wallet: total, held by open orders, available')
    .action(
      run(async () => {
        const answer = await signedClient().spotWallet();
        print(answer, () => table(balanceRows(answer.data)));
      }),
    );

  /** An order's current record as a table, or the message when there is no id to read it by. */
  const showOrder = async (c: OpenSpotClient, id: number | undefined, message: string) => {
    // Answers to state changes carry no order record: fetch it, so the caller sees the status at once.
    const order = id === undefined ? undefined : (await c.order(id)).data;
    print({ id, message, order }, () => (order === undefined ? message : table(orderRows([order]))));
  };

  program
    .command('order')
    .description(
      'place an order: a limit order with --price, else a market order; --stop, --take-profit or ' +
        '--trailing make it a conditional order that waits for the last trade price',
    )
    .addArgument(new Argument('<side>', 'buy or sell').choices(['buy', 'sell']))
    .argument('<pair>', 'e.g. BTC/EUR')
    .argument('<volume>', 'in the base asset, e.g. 0.01')
    .option('--price <price>', 'limit price in the quote asset')
    .addOption(
      new Option('--type <type>', 'limit or market (default: limit when --price is given)').choices([
        'limit',
        'market',
      ]),
    )
    .option(
      '--stop <price>',
      'stop-loss: trades when the last price reaches PRICE (a sell at or below it, a buy at or above)',
    )
    .option(
      '--take-profit <price>',
      'take-profit: trades when the last price reaches PRICE (a sell at or above it, a buy at or below)',
    )
    .option(
      '--limit <price>',
      'with --stop or --take-profit: trade as a limit order at this price, not at market',
    )
    .option(
      '--trailing <offset>',
      'trailing stop: OFFSET (2%, or a price distance such as 150.5) behind the best price since placement',
      parseTrailingOffset,
    )
    .addOption(
      new Option('--ioc', 'immediate or cancel: what does not trade at once is canceled').conflicts([
        'fok',
        'gtd',
      ]),
    )
    .addOption(new Option('--fok', 'fill or kill: trades in full at once, or not at all').conflicts('gtd'))
    .addOption(
      new Option(
        '--gtd <time>',
        'good till: canceled at TIME (30m, 12h, 7d, Unix seconds or ISO time)',
      ).argParser((value: string) => parseExpiry(value, Date.now())),
    )
    .option('--post-only', 'only add liquidity: canceled instead of trading on arrival')
    .option('--client-id <id>', 'your own id for the order (1-36 of A-Z a-z 0-9 _ -)', parseClientOrderId)
    .addOption(new Option('--stp <mode>', 'self-trade prevention (default cancel-oldest)').choices(STP_MODES))
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  openspot order buy BTC/EUR 0.01 --price 60000                 limit buy',
        '  openspot order sell BTC/EUR 0.01 --stop 58000                 stop-loss: sells at market once the last price <= 58000',
        '  openspot order sell BTC/EUR 0.01 --stop 58000 --limit 57900   stop-loss-limit: then a limit sell at 57900',
        '  openspot order sell BTC/EUR 0.01 --take-profit 65000          take-profit: sells at market once the last price >= 65000',
        '  openspot order sell BTC/EUR 0.01 --trailing 2%                trailing stop 2 % below the best price since placement',
        '  openspot order buy BTC/EUR 0.01 --trailing 150.5              trailing stop 150.5 EUR above the lowest price',
      ].join('\n'),
    )
    .action(
      run(async (side: Side, pair: string, volume: string, o: OrderControlFlags & OrderTypeFlags) => {
        const fields = orderTypeFields(o);
        const c = signedClient();
        const created = await c.createOrder({
          pair: await slashPair(c, pair),
          direction: side,
          volume,
          ...fields,
          ...orderControls(o),
        });
        await showOrder(c, created.id, created.envelope.message);
      }),
    );

  program
    .command('orders')
    .description('your open orders (--closed: closed and canceled ones, with their executions)')
    .option('--closed', 'closed orders instead of open ones')
    .option('--pair <pair>', 'only this market')
    .option('--page-size <n>', 'paginate', positiveInt('--page-size'))
    .option('--page <n>', 'page number (with --page-size)', positiveInt('--page'))
    .option('--client-id <id>', 'only your newest order with this client order id', parseClientOrderId)
    .action(
      run(
        async (o: {
          closed?: boolean;
          pair?: string;
          pageSize?: number;
          page?: number;
          clientId?: string;
        }) => {
          const c = signedClient();
          if (o.clientId !== undefined) {
            const answer = await c.getByClientOrderId(o.clientId);
            print(answer, () => table(orderRows([answer.data])));
            return;
          }
          const params = {
            pair: o.pair === undefined ? undefined : await slashPair(c, o.pair),
            pageSize: o.pageSize,
            page: o.page,
          };
          const answer = o.closed === true ? await c.closedOrders(params) : await c.openOrders(params);
          print(answer, () => {
            const meta = answer.meta;
            const footer =
              meta === undefined
                ? ''
                : `\npage ${meta.current_page} of ${meta.last_page}, ${meta.total} orders`;
            return table(orderRows(answer.data)) + footer;
          });
        },
      ),
    );

  program
    .command('cancel [id]')
    .description('cancel one of your open orders, by id or --client-id, or all of them with --all')
    .option('--client-id <id>', 'the order placed with this client order id', parseClientOrderId)
    .option('--all', 'all your open orders (with --pair: those of one market)')
    .option('--pair <pair>', 'with --all: only this market')
    .action(
      run(async (id: string | undefined, o: { clientId?: string; all?: boolean; pair?: string }) => {
        const chosen = [id !== undefined, o.clientId !== undefined, o.all === true].filter(Boolean).length;
        if (chosen !== 1) throw new Error('name one order (ID or --client-id), or use --all');
        if (o.pair !== undefined && o.all !== true) throw new Error('--pair goes with --all');
        const c = signedClient();
        if (o.all === true) {
          const answer = await c.cancelAll({
            pair: o.pair === undefined ? undefined : await slashPair(c, o.pair),
          });
          const n = answer.data.canceled;
          print(answer, () => `${n} order${n === 1 ? '' : 's'} canceled.`);
          return;
        }
        const answer =
          o.clientId !== undefined
            ? await c.cancelByClientOrderId(o.clientId)
            : await c.cancelOrder(positiveInt('order id')(id ?? ''));
        print(answer, () => answer.message);
      }),
    );

  program
    .command('amend <id>')
    .description(
      'change an open order in place: its price, a waiting stop’s trigger, or its total volume (executed part included)',
    )
    .option('--price <price>', 'new limit price (the order moves to the back of its level)')
    .option('--trigger <price>', 'new trigger price of a waiting stop-loss or take-profit order')
    .option('--volume <volume>', 'new total volume (lower keeps its place in the queue)')
    .action(
      run(async (id: string, o: { price?: string; volume?: string; trigger?: string }) => {
        if (o.price === undefined && o.volume === undefined && o.trigger === undefined)
          throw new Error('give --price, --trigger, --volume or a combination');
        const orderId = positiveInt('order id')(id);
        const c = signedClient();
        const answer = await c.amend(orderId, { price: o.price, volume: o.volume, triggerPrice: o.trigger });
        await showOrder(c, orderId, answer.message);
      }),
    );

  program
    .command('dead-man')
    .description(
      "dead man's switch: unless called again within SECONDS, all your open orders are canceled (0: off)",
    )
    .argument('<seconds>', 'timeout, 0 to 86400', parseSwitchTimeout)
    .action(
      run(async (seconds: number) => {
        const answer = await signedClient().cancelAllAfter(seconds);
        print(answer, () => describeSwitch(answer.data.trigger_time));
      }),
    );

  program
    .command('trades')
    .description('your executions')
    .option('--pair <pair>', 'only this market')
    .option('--page-size <n>', 'paginate', positiveInt('--page-size'))
    .option('--page <n>', 'page number (with --page-size)', positiveInt('--page'))
    .action(
      run(async (o: { pair?: string; pageSize?: number; page?: number }) => {
        const c = signedClient();
        const answer = await c.trades({
          pairs: o.pair === undefined ? undefined : [await slashPair(c, o.pair)],
          pageSize: o.pageSize,
          page: o.page,
        });
        print(answer, () => table(tradeRows(answer.data)));
      }),
    );
}
