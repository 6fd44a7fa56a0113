/**
 * Who is subscribed to what, indexed both ways: channel → connections for fan-out, and
 * connection → channels (on the connection) for cleanup when it goes away.
 */
import type { ResolvedChannel } from './channels.js';
import type { ClientConnection } from './connection.js';

interface ChannelEntry {
  readonly resolved: ResolvedChannel;
  readonly connections: Set<ClientConnection>;
}

export class ChannelRegistry {
  private readonly channels = new Map<string, ChannelEntry>();
  private subscriptionCount = 0;

  /** False when the connection was already subscribed. */
  add(connection: ClientConnection, channel: string, resolved: ResolvedChannel): boolean {
    let entry = this.channels.get(channel);
    if (entry === undefined) {
      entry = { resolved, connections: new Set() };
      this.channels.set(channel, entry);
    }
    if (entry.connections.has(connection)) return false;
    entry.connections.add(connection);
    connection.channels.add(channel);
    this.subscriptionCount += 1;
    return true;
  }

  remove(connection: ClientConnection, channel: string): boolean {
    const entry = this.channels.get(channel);
    if (entry === undefined || !entry.connections.delete(connection)) return false;
    connection.channels.delete(channel);
    this.subscriptionCount -= 1;
    // Empty channels are dropped so the map does not grow with every name ever subscribed.
    if (entry.connections.size === 0) this.channels.delete(channel);
    return true;
  }

  removeAll(connection: ClientConnection): void {
    for (const channel of [...connection.channels]) this.remove(connection, channel);
  }

  subscribers(channel: string): ReadonlySet<ClientConnection> | undefined {
    return this.channels.get(channel)?.connections;
  }

  count(channel: string): number {
    return this.channels.get(channel)?.connections.size ?? 0;
  }

  /** Names of the subscribed channels matching a predicate (a snapshot: safe to mutate after). */
  channelsWhere(predicate: (channel: string, resolved: ResolvedChannel) => boolean): string[] {
    const names: string[] = [];
    for (const [name, entry] of this.channels) if (predicate(name, entry.resolved)) names.push(name);
    return names;
  }

  get subscriptions(): number {
    return this.subscriptionCount;
  }

  get channelCount(): number {
    return this.channels.size;
  }
}
