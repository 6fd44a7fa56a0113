/**
 * Which API key obtained each private-channel token of a live connection.
 *
 * A Pusher token is HMAC(app secret, "<socket_id>:<channel>"): it says nothing of the key that
 * asked for it, so on its own it stays valid after that key is revoked — a client could re-send
 * its subscribe frame and read the user's events again. POST /broadcasting/auth therefore records
 * (socket id, channel) → API key here when it issues a token, and the WebSocket server opens a
 * private subscription only when the token is valid, was recorded for this very connection, and
 * its key is still active at that moment.
 *
 * Tokens are issued only for connections of this process (a socket id it does not know is
 * refused), and the records die with the connection: memory is bounded by the connections, at
 * most `maxPerConnection` records each (the oldest is forgotten first).
 */

export interface ChannelGrantIssuer {
  /**
   * Records that `apiKey` obtained a token for `channel` on connection `socketId`. False when no
   * such connection is open here: no token must then be issued.
   */
  grant(socketId: string, channel: string, apiKey: string): boolean;
}

export interface ChannelGrantOptions {
  /** Whether an API key may still be used (exists, not revoked); asked at every private subscribe. */
  readonly isKeyActive: (apiKey: string) => boolean | Promise<boolean>;
  /** Most records per connection. Default 100. */
  readonly maxPerConnection?: number;
}

export type GrantCheck = 'granted' | 'not-issued' | 'revoked';

export class ChannelGrants implements ChannelGrantIssuer {
  readonly #connections = new Map<string, Map<string, string>>();
  readonly #isKeyActive: (apiKey: string) => boolean | Promise<boolean>;
  readonly #max: number;

  constructor(options: ChannelGrantOptions) {
    this.#isKeyActive = options.isKeyActive;
    this.#max = options.maxPerConnection ?? 100;
  }

  /** A connection was established (before its socket id is sent to the client). */
  opened(socketId: string): void {
    this.#connections.set(socketId, new Map());
  }

  /** The connection is gone: its records go with it. */
  closed(socketId: string): void {
    this.#connections.delete(socketId);
  }

  grant(socketId: string, channel: string, apiKey: string): boolean {
    const grants = this.#connections.get(socketId);
    if (grants === undefined) return false;
    // Re-inserted so that the latest key to authorize a channel is the one that counts.
    grants.delete(channel);
    if (grants.size >= this.#max) {
      const oldest = grants.keys().next();
      if (oldest.done !== true) grants.delete(oldest.value);
    }
    grants.set(channel, apiKey);
    return true;
  }

  /**
   * Whether a subscription to `channel` on `socketId` may open now (its token already verified);
   * a promise when the key's state is read from the credential store.
   */
  check(socketId: string, channel: string): GrantCheck | Promise<GrantCheck> {
    const apiKey = this.#connections.get(socketId)?.get(channel);
    if (apiKey === undefined) return 'not-issued';
    const active = this.#isKeyActive(apiKey);
    const verdict = (yes: boolean): GrantCheck => (yes ? 'granted' : 'revoked');
    return active instanceof Promise ? active.then(verdict) : verdict(active);
  }

  /** The keys that obtained tokens on a connection (fault injection scopes a connection by them). */
  keysOf(socketId: string): string[] {
    const grants = this.#connections.get(socketId);
    return grants === undefined ? [] : [...new Set(grants.values())];
  }

  /** Connections tracked (for tests and metrics). */
  get connections(): number {
    return this.#connections.size;
  }
}
