/**
 * `openspot book PAIR --watch`: a live view of the order book and the last trades over the
 * WebSocket channels, redrawn in place (alternate screen, at most ten frames a second). With
 * --json, or when stdout is not a terminal, it prints one JSON line per book change instead
 * (one per order-book update, i.e. per changed level, once the local book verified it).
 * Ctrl-C (or SIGTERM) disconnects, restores the terminal and exits.
 */
import type { TickerItem, TradeItem } from '../client/channels.js';
import { joinPair } from '../client/channels.js';
import type { OpenSpotClient } from '../client/client.js';
import { renderWatch } from './trader-format.js';

export interface WatchOptions {
  readonly client: OpenSpotClient;
  /** Slash form. */
  readonly pair: string;
  /** Levels per side. */
  readonly depth: number;
  readonly appKey: string;
  readonly json: boolean;
  readonly out?: NodeJS.WriteStream;
}

const TRADES_SHOWN = 10;
const FRAME_MS = 100;

/** Resolves when the user stops the watch. */
export async function watchBook(options: WatchOptions): Promise<void> {
  // Loaded here so the other commands work without the optional pusher-js dependency.
  const { connectRealtime } = await import('../client/realtime.js');
  const out = options.out ?? process.stdout;
  const interactive = !options.json && out.isTTY === true;
  const url = new URL(options.client.baseUrl);
  const tls = url.protocol === 'https:';
  const realtime = connectRealtime({
    wsHost: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    wsPort: url.port === '' ? (tls ? 443 : 80) : Number(url.port),
    appKey: options.appKey,
    forceTLS: tls,
  });

  let ticker: TickerItem | undefined;
  let trades: TradeItem[] = [];
  let notice: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const draw = (): void => {
    timer = undefined;
    out.write(
      `\x1b[H\x1b[J${renderWatch({
        symbol: options.pair,
        connection: realtime.pusher.connection.state,
        sequence: book.book.sequence,
        synced: book.book.synced,
        bids: book.book.bids(options.depth),
        asks: book.book.asks(options.depth),
        ticker,
        trades,
        depth: options.depth,
        notice,
      })}\n`,
    );
  };
  const redraw = (): void => {
    if (interactive && !stopped && timer === undefined) timer = setTimeout(draw, FRAME_MS);
  };

  const pair = joinPair(options.pair);
  const book = realtime.localBook(pair, (local, result) => {
    notice =
      result.status === 'gap' || result.status === 'checksum'
        ? `resynchronizing after a ${result.status === 'gap' ? 'sequence gap' : 'checksum mismatch'}…`
        : undefined;
    if (!interactive && result.status === 'ok') {
      out.write(
        `${JSON.stringify({
          symbol: local.symbol,
          sequence: local.sequence,
          bids: local.bids(options.depth),
          asks: local.asks(options.depth),
        })}\n`,
      );
    }
    redraw();
  });
  realtime.trades(pair, (message) => {
    // Snapshots arrive oldest first, like updates; keep the newest few, newest first.
    trades = [...[...message.data].reverse(), ...(message.type === 'snapshot' ? [] : trades)].slice(
      0,
      TRADES_SHOWN,
    );
    redraw();
  });
  realtime.ticker(pair, (message) => {
    ticker = message.data[0];
    redraw();
  });
  realtime.pusher.connection.bind('state_change', redraw);

  if (interactive) out.write('\x1b[?1049h\x1b[?25l'); // alternate screen, hidden cursor
  redraw();

  await new Promise<void>((resolve, reject) => {
    const finish = (error?: Error): void => {
      stopped = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (timer !== undefined) clearTimeout(timer);
      realtime.disconnect();
      if (interactive) out.write('\x1b[?25h\x1b[?1049l'); // cursor back, main screen back
      if (error === undefined) resolve();
      else reject(error);
    };
    const onSignal = (): void => finish();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // An unknown pair is refused by the server: nothing will ever arrive, so stop with the reason.
    book.ready.catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
  });
}
