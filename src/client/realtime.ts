/**
 * Real-time channels through `pusher-js` (OpenSpot's WebSocket server speaks the Pusher
 * protocol 7): typed subscribe helpers for the interface's channels, private channel
 * authorization through a signed POST /broadcasting/auth, and a self-repairing local order book.
 *
 * Every channel delivers a `snapshot` event right after subscribing, then `update` events.
 */
import pusherModule, { type Channel } from 'pusher-js';
import {
  type BookMessage,
  type CandleMessage,
  channelNames,
  type ExecutionMessage,
  type MessageType,
  type TickerMessage,
  type TradeMessage,
} from './channels.js';
import { type BookApplyResult, LocalBook } from './local-book.js';
import type { ChannelAuth, Interval } from './types.js';

// pusher-js's typings declare `exports.default`, while its Node build assigns `module.exports`:
// take whichever the runtime has.
type PusherClass = typeof pusherModule.default;
export type PusherClient = InstanceType<PusherClass>;
const Pusher: PusherClass =
  (pusherModule as unknown as { default?: PusherClass }).default ?? (pusherModule as unknown as PusherClass);

/**
 * What private channels need of a client: a signed POST /broadcasting/auth. OpenSpotClient is
 * one; the browser pages (web/) pass their own WebCrypto signer.
 */
export interface ChannelAuthorizer {
  readonly hasCredentials: boolean;
  broadcastingAuth(socketId: string, channelName: string): Promise<ChannelAuth>;
}

export interface RealtimeOptions {
  readonly wsHost: string;
  readonly wsPort: number;
  /** The server's public application key (OpenSpot: WS_APP_KEY, `openspot-key` in development). */
  readonly appKey: string;
  /** Signs POST /broadcasting/auth for private channels; public channels need none. */
  readonly client?: ChannelAuthorizer;
  /** wss instead of ws. Default false. */
  readonly forceTLS?: boolean;
  /** Client ping interval in ms. Default 10000, the interface's client setting. */
  readonly activityTimeout?: number;
}

export type Handler<M> = (message: M, event: MessageType) => void;

export interface Subscription {
  readonly channel: string;
  /** Settles when the server accepts (or refuses) the current subscription. */
  readonly ready: Promise<void>;
  /** Unsubscribes and subscribes again: the server answers with a fresh snapshot. */
  resubscribe(): void;
  unsubscribe(): void;
}

export interface BookSubscription extends Subscription {
  readonly book: LocalBook;
}

export interface Realtime {
  /** The underlying pusher-js client, for what the helpers do not cover. */
  readonly pusher: PusherClient;
  /** Resolves once connected; rejects when the connection fails or `timeoutMs` passes. */
  connected(timeoutMs?: number): Promise<void>;
  ticker(pair: string, handler: Handler<TickerMessage>): Subscription;
  ohlc(pair: string, interval: Interval, handler: Handler<CandleMessage>): Subscription;
  trades(pair: string, handler: Handler<TradeMessage>): Subscription;
  book(pair: string, handler: Handler<BookMessage>): Subscription;
  /** `private-order-executed.{userId}`: needs `client` with credentials of that user. */
  executions(userId: number, handler: Handler<ExecutionMessage>): Subscription;
  /**
   * A LocalBook kept in sync with `order-book.{pair}`: on a sequence gap or checksum mismatch it
   * resubscribes by itself. `onChange` sees every applied message and its result.
   */
  localBook(pair: string, onChange?: (book: LocalBook, result: BookApplyResult) => void): BookSubscription;
  disconnect(): void;
}

const EVENTS: readonly MessageType[] = ['snapshot', 'update'];

class ChannelSubscription<M> implements Subscription {
  #channel: Channel | undefined;
  #ready: Promise<void> = Promise.resolve();

  constructor(
    private readonly pusher: PusherClient,
    readonly channel: string,
    private readonly handler: Handler<M>,
  ) {
    this.#subscribe();
  }

  get ready(): Promise<void> {
    return this.#ready;
  }

  #subscribe(): void {
    // Bind before subscribing: an authorization failure is reported synchronously inside
    // pusher.subscribe(), and would be lost if the handlers came after it.
    const channel = this.pusher.channels.add(this.channel, this.pusher);
    this.#channel = channel;
    this.#ready = new Promise<void>((resolve, reject) => {
      channel.bind('pusher:subscription_succeeded', () => resolve());
      channel.bind('pusher:subscription_error', (error: unknown) =>
        reject(new Error(`subscription to ${this.channel} refused: ${JSON.stringify(error)}`)),
      );
    });
    // Nobody may be awaiting `ready`; a refusal must not become an unhandled rejection.
    this.#ready.catch(() => undefined);
    // pusher-js hands over the JSON-parsed `data`; the channel name fixes its shape (channels.ts).
    for (const event of EVENTS) channel.bind(event, (data: M) => this.handler(data, event));
    this.pusher.subscribe(this.channel);
  }

  resubscribe(): void {
    this.unsubscribe();
    this.#subscribe();
  }

  unsubscribe(): void {
    // pusher-js keeps a channel object whose subscription is still pending: clear its bindings so
    // a resubscription does not deliver every message twice.
    this.#channel?.unbind_all();
    this.pusher.unsubscribe(this.channel);
    this.#channel = undefined;
  }
}

export function connectRealtime(options: RealtimeOptions): Realtime {
  const forceTLS = options.forceTLS ?? false;
  const pusher = new Pusher(options.appKey, {
    // pusher-js 8 requires a cluster even when wsHost decides where to connect.
    cluster: 'openspot',
    wsHost: options.wsHost,
    wsPort: options.wsPort,
    wssPort: options.wsPort,
    forceTLS,
    enabledTransports: forceTLS ? ['wss'] : ['ws'],
    // No stats requests to Pusher's hosts: only the configured server is contacted.
    disableStats: true,
    activityTimeout: options.activityTimeout ?? 10_000,
    channelAuthorization: {
      customHandler: ({ socketId, channelName }, callback) => {
        const client = options.client;
        if (client === undefined || !client.hasCredentials) {
          callback(new Error('private channels need an OpenSpotClient with API credentials'), null);
          return;
        }
        client.broadcastingAuth(socketId, channelName).then(
          (answer) => callback(null, { auth: answer.auth }),
          (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
        );
      },
    },
  });

  const subscribe = <M>(channel: string, handler: Handler<M>): Subscription =>
    new ChannelSubscription<M>(pusher, channel, handler);

  return {
    pusher,
    connected(timeoutMs = 10_000) {
      if (pusher.connection.state === 'connected') return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`not connected after ${timeoutMs} ms`)), timeoutMs);
        const onChange = ({ current }: { current: string }) => {
          if (current === 'connected') finish();
          else if (current === 'failed') finish(new Error('the WebSocket connection failed'));
        };
        function finish(error?: Error): void {
          clearTimeout(timer);
          pusher.connection.unbind('state_change', onChange);
          if (error === undefined) resolve();
          else reject(error);
        }
        pusher.connection.bind('state_change', onChange);
      });
    },
    ticker: (pair, handler) => subscribe(channelNames.ticker(pair), handler),
    ohlc: (pair, interval, handler) => subscribe(channelNames.ohlc(pair, interval), handler),
    trades: (pair, handler) => subscribe(channelNames.trade(pair), handler),
    book: (pair, handler) => subscribe(channelNames.book(pair), handler),
    executions: (userId, handler) => subscribe(channelNames.executions(userId), handler),
    localBook(pair, onChange) {
      const book = new LocalBook();
      const subscription: Subscription = subscribe<BookMessage>(channelNames.book(pair), (message) => {
        const result = book.apply(message);
        // A lost message or a drifted copy: the server re-sends a snapshot on resubscription.
        if (result.status === 'gap' || result.status === 'checksum') subscription.resubscribe();
        onChange?.(book, result);
      });
      // While disconnected the copy silently ages; pusher-js resubscribes after reconnecting and
      // the snapshot then restores it. Until then, say it is not in sync.
      const onState = ({ current }: { current: string }) => {
        if (current === 'connected' || !book.synced) return;
        book.reset();
        onChange?.(book, { status: 'awaiting-snapshot' });
      };
      pusher.connection.bind('state_change', onState);
      return {
        book,
        channel: subscription.channel,
        get ready() {
          return subscription.ready;
        },
        resubscribe: () => subscription.resubscribe(),
        unsubscribe: () => {
          pusher.connection.unbind('state_change', onState);
          subscription.unsubscribe();
        },
      };
    },
    disconnect: () => pusher.disconnect(),
  };
}
