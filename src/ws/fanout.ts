/**
 * Publishing to a channel. The frame is serialized once per message, turned into one Buffer and
 * handed to every subscriber: ws writes a Buffer without copying it, so the per-subscriber cost is
 * a frame header. Sends happen synchronously in publish order, and each socket writes in order,
 * so every subscriber sees a channel's messages in the order they were published.
 *
 * Inside a `Batch` (one committed exchange batch: a book update and a trade, say), every
 * connection that receives something is corked until the batch ends, so all its frames of the
 * batch reach the kernel in one write. On a busy feed the system calls, one per frame and
 * subscriber, are most of the fan-out's cost; this makes them one per batch and subscriber.
 */
import type { ClientConnection } from './connection.js';
import type { WsFaults } from './faults.js';
import { dataFrame } from './frames.js';
import type { ChannelRegistry } from './registry.js';

/** The connections corked during one batch of publishes, to uncork when it ends. */
export class Batch {
  private corked: ClientConnection[] = [];

  /** Corks the connection if this batch has not yet. */
  hold(connection: ClientConnection): void {
    if (connection.cork()) this.corked.push(connection);
  }

  /** Writes out every held connection, each in one go. */
  release(): void {
    const corked = this.corked;
    this.corked = [];
    for (const connection of corked) connection.uncork();
  }
}

/** Returns how many subscribers the message was queued for. */
export function publishToChannel(
  registry: ChannelRegistry,
  channel: string,
  event: string,
  payload: unknown,
  batch?: Batch,
  faults?: WsFaults,
): number {
  const subscribers = registry.subscribers(channel);
  if (subscribers === undefined || subscribers.size === 0) return 0;
  const frame = Buffer.from(dataFrame(channel, event, payload));
  let sent = 0;
  if (faults?.active === true) {
    // Fault injection (src/chaos) decides per subscriber; off, this loop is never entered.
    for (const connection of subscribers) {
      batch?.hold(connection);
      if (faults.deliver(connection, channel, event, frame)) sent += 1;
    }
    return sent;
  }
  // A slow subscriber cut off by `send` removes itself from this very set; deleting the current
  // element of a Set while iterating it is well defined and does not skip the others.
  for (const connection of subscribers) {
    batch?.hold(connection);
    if (connection.send(frame)) sent += 1;
  }
  return sent;
}
