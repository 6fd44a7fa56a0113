/**
 * Publishing to a channel. The frame is serialized once per message, turned into one Buffer and
 * handed to every subscriber: ws writes a Buffer without copying it, so the per-subscriber cost is
 * a frame header. Sends happen synchronously in publish order, and each socket writes in order,
 * so every subscriber sees a channel's messages in the order they were published.
 */
import { dataFrame } from './frames.js';
import type { ChannelRegistry } from './registry.js';

/** Returns how many subscribers the message was queued for. */
export function publishToChannel(
  registry: ChannelRegistry,
  channel: string,
  event: string,
  payload: unknown,
): number {
  const subscribers = registry.subscribers(channel);
  if (subscribers === undefined || subscribers.size === 0) return 0;
  const frame = Buffer.from(dataFrame(channel, event, payload));
  let sent = 0;
  // A slow subscriber cut off by `send` removes itself from this very set; deleting the current
  // element of a Set while iterating it is well defined and does not skip the others.
  for (const connection of subscribers) if (connection.send(frame)) sent += 1;
  return sent;
}
