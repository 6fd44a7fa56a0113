/**
 * The page's WebSocket: pusher-js to the exchange's own WebSocket server (the page's own host and
 * port; Pusher protocol 7), through the TypeScript client's helpers (src/client/realtime.ts), so
 * the page uses the public and private channels exactly as a bot does.
 */
import { type ChannelAuthorizer, connectRealtime, type Realtime } from '../../src/client/realtime.js';
import type { ChannelAuth } from '../../src/client/types.js';
import type { SignedClient } from '../shared/api.js';

/** Signs POST /broadcasting/auth with whichever account is signed in at that moment. */
export class SessionAuthorizer implements ChannelAuthorizer {
  client: SignedClient | undefined;

  get hasCredentials(): boolean {
    return this.client !== undefined;
  }

  async broadcastingAuth(socketId: string, channelName: string): Promise<ChannelAuth> {
    if (this.client === undefined) throw new Error('not signed in');
    if (!/^\d+\.\d+$/.test(socketId)) throw new TypeError(`not a socket id: ${socketId}`);
    // socket_id is a JSON number in the interface: written from the id's own digits, never a float.
    const nonce = JSON.stringify(this.client.nextNonce());
    const rawBody = `{"socket_id":${socketId},"channel_name":${JSON.stringify(channelName)},"nonce":${nonce}}`;
    return this.client.request<ChannelAuth>('POST', '/broadcasting/auth', { rawBody });
  }
}

export function connectPage(appKey: string, authorizer: ChannelAuthorizer): Realtime {
  const tls = location.protocol === 'https:';
  const port = location.port === '' ? (tls ? 443 : 80) : Number(location.port);
  return connectRealtime({
    wsHost: location.hostname,
    wsPort: port,
    appKey,
    forceTLS: tls,
    client: authorizer,
  });
}
