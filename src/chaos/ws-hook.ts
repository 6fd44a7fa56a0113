/**
 * WebSocket faults (the WsFaults seam of src/ws):
 * - ws_delay: every frame to a connection (snapshots, updates, pongs) waits; frames keep their
 *   order, so a later frame never overtakes a delayed one;
 * - book_updates: an `order-book` update is dropped, sent twice, or held back until the next
 *   update of that channel to that connection has been sent (at most REORDER_WINDOW_MS);
 * - disconnects: once a second, each connection is closed (4200 or 4201: pusher-js reconnects at
 *   once) with the fault's probability.
 *
 * A connection is in a key's scope once that key obtained a private-channel token for it (POST
 * /broadcasting/auth records it in ChannelGrants); a connection with public channels only is
 * anonymous, reached only by faults set for everyone.
 */
import type { ClientConnection } from '../ws/connection.js';
import type { WsFaults } from '../ws/faults.js';
import type { Chaos } from './controller.js';

/** How long a held-back book update waits for a successor to overtake it. */
export const REORDER_WINDOW_MS = 1000;
/** How often the disconnect fault draws for each connection. */
export const DISCONNECT_SWEEP_MS = 1000;

const BOOK_CHANNEL = 'order-book.';
const UPDATE_EVENT = 'update';

interface DelayQueue {
  readonly frames: { frame: string | Buffer; due: number }[];
  timer: NodeJS.Timeout | undefined;
}

interface Held {
  readonly frame: Buffer;
  readonly timer: NodeJS.Timeout;
}

export interface WsChaosOptions {
  readonly chaos: Chaos;
  /** The API keys that authorized private channels on a connection (ChannelGrants.keysOf). */
  readonly keysOf: (socketId: string) => readonly string[];
  /** Monotonic ms. Default performance.now. */
  readonly now?: () => number;
}

export class WsChaos implements WsFaults {
  readonly #chaos: Chaos;
  readonly #keysOf: (socketId: string) => readonly string[];
  readonly #now: () => number;
  readonly #delayed = new WeakMap<ClientConnection, DelayQueue>();
  /** Held-back book updates per connection and channel. */
  readonly #held = new Map<ClientConnection, Map<string, Held>>();
  #connections: () => Iterable<ClientConnection> = () => [];
  #sweep: NodeJS.Timeout | undefined;
  readonly #unsubscribe: () => void;

  constructor(options: WsChaosOptions) {
    this.#chaos = options.chaos;
    this.#keysOf = options.keysOf;
    this.#now = options.now ?? (() => performance.now());
    this.#unsubscribe = this.#chaos.onChange(() => this.#schedule());
  }

  get active(): boolean {
    return this.#chaos.flags.ws;
  }

  attach(connections: () => Iterable<ClientConnection>): void {
    this.#connections = connections;
  }

  deliver(connection: ClientConnection, channel: string, event: string, frame: Buffer): boolean {
    if (event !== UPDATE_EVENT || !channel.startsWith(BOOK_CHANNEL)) return connection.send(frame);
    const keys = this.#keysOf(connection.socketId);
    const held = this.#takeHeld(connection, channel);
    const picked = this.#chaos.pick('book_updates', keys);
    let sent: boolean;
    const key = keys[0];
    const draw = picked === undefined ? 1 : this.#chaos.random();
    const { drop = 0, duplicate = 0, reorder = 0 } = picked?.fault ?? {};
    if (picked !== undefined && draw < drop) {
      this.#chaos.injected(picked, 'book_drop', key, { socket_id: connection.socketId, channel });
      sent = false;
    } else if (picked !== undefined && draw < drop + duplicate) {
      this.#chaos.injected(picked, 'book_duplicate', key, { socket_id: connection.socketId, channel });
      sent = connection.send(frame);
      connection.send(frame);
    } else if (picked !== undefined && draw < drop + duplicate + reorder && held === undefined) {
      this.#chaos.injected(picked, 'book_reorder', key, { socket_id: connection.socketId, channel });
      this.#hold(connection, channel, frame);
      return true;
    } else sent = connection.send(frame);
    // The update held back goes after its successor: the client sees them swapped.
    if (held !== undefined) connection.send(held);
    return sent;
  }

  intercept(connection: ClientConnection, frame: string | Buffer): boolean {
    const now = this.#now();
    const queue = this.#delayed.get(connection);
    const last = queue?.frames[queue.frames.length - 1];
    // Behind a delayed frame, every frame waits its turn, delayed or not: order is kept.
    let due = last === undefined ? now : last.due;
    const keys = this.#keysOf(connection.socketId);
    const picked = this.#chaos.pick('ws_delay', keys);
    if (picked !== undefined) {
      const ms = picked.fault.ms + Math.floor(this.#chaos.random() * (picked.fault.jitter_ms + 1));
      this.#chaos.injected(picked, 'ws_delay', keys[0], { socket_id: connection.socketId, ms });
      due = Math.max(due, now + ms);
    } else if (last === undefined) return false;
    this.#enqueue(connection, frame, due);
    return true;
  }

  /** Draws for every open connection once (what the timer does each second). */
  sweep(): void {
    for (const connection of [...this.#connections()]) {
      if (!connection.isOpen) continue;
      const keys = this.#keysOf(connection.socketId);
      const picked = this.#chaos.pick('disconnects', keys);
      if (picked === undefined || !this.#chaos.chance(picked.fault.rate)) continue;
      this.#chaos.injected(picked, 'disconnect', keys[0], {
        socket_id: connection.socketId,
        code: picked.fault.code,
      });
      connection.close(picked.fault.code, 'Forced disconnect (fault injection)');
    }
  }

  /** Stops the timers (the server is closing); frames still delayed or held are dropped. */
  close(): void {
    this.#unsubscribe();
    if (this.#sweep !== undefined) clearInterval(this.#sweep);
    this.#sweep = undefined;
    for (const channels of this.#held.values())
      for (const held of channels.values()) clearTimeout(held.timer);
    this.#held.clear();
  }

  #schedule(): void {
    if (this.#chaos.flags.disconnects && this.#sweep === undefined) {
      this.#sweep = setInterval(() => this.sweep(), DISCONNECT_SWEEP_MS);
      this.#sweep.unref();
    } else if (!this.#chaos.flags.disconnects && this.#sweep !== undefined) {
      clearInterval(this.#sweep);
      this.#sweep = undefined;
    }
  }

  #enqueue(connection: ClientConnection, frame: string | Buffer, due: number): void {
    let queue = this.#delayed.get(connection);
    if (queue === undefined) {
      queue = { frames: [], timer: undefined };
      this.#delayed.set(connection, queue);
    }
    queue.frames.push({ frame, due });
    if (queue.timer === undefined) this.#arm(connection, queue);
  }

  #arm(connection: ClientConnection, queue: DelayQueue): void {
    const head = queue.frames[0];
    if (head === undefined) return;
    queue.timer = setTimeout(() => this.#flush(connection, queue), Math.max(0, head.due - this.#now()));
    queue.timer.unref();
  }

  #flush(connection: ClientConnection, queue: DelayQueue): void {
    queue.timer = undefined;
    if (!connection.isOpen) {
      this.#delayed.delete(connection);
      return;
    }
    const now = this.#now();
    while (queue.frames.length > 0 && queue.frames[0]!.due <= now)
      connection.write(queue.frames.shift()!.frame);
    if (queue.frames.length === 0) this.#delayed.delete(connection);
    else this.#arm(connection, queue);
  }

  #hold(connection: ClientConnection, channel: string, frame: Buffer): void {
    let channels = this.#held.get(connection);
    if (channels === undefined) {
      channels = new Map();
      this.#held.set(connection, channels);
    }
    // No successor in time: sent late, in order.
    const timer = setTimeout(() => {
      const held = this.#takeHeld(connection, channel);
      if (held !== undefined) connection.send(held);
    }, REORDER_WINDOW_MS);
    timer.unref();
    channels.set(channel, { frame, timer });
  }

  #takeHeld(connection: ClientConnection, channel: string): Buffer | undefined {
    const channels = this.#held.get(connection);
    const held = channels?.get(channel);
    if (channels === undefined || held === undefined) return undefined;
    clearTimeout(held.timer);
    channels.delete(channel);
    if (channels.size === 0) this.#held.delete(connection);
    return held.frame;
  }
}
