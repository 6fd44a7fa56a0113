/**
 * The seam through which fault injection (src/chaos) reaches the WebSocket server. The server
 * asks `active` first, so with no fault set a publish and a send cost one boolean check.
 */
import type { ClientConnection } from './connection.js';

export interface WsFaults {
  /** False unless some WebSocket fault is set. */
  readonly active: boolean;
  /**
   * Delivers one published message to one subscriber: sends it, or drops, duplicates or holds it
   * back. Returns true when it counts as sent.
   */
  deliver(connection: ClientConnection, channel: string, event: string, frame: Buffer): boolean;
  /**
   * Sees every frame about to be written to a connection; returns true when it took the frame
   * (to write it later through `connection.write`), false to let it be written now.
   */
  intercept(connection: ClientConnection, frame: string | Buffer): boolean;
  /** Given the server's open connections once, for faults that act on connections (disconnects). */
  attach(connections: () => Iterable<ClientConnection>): void;
}
