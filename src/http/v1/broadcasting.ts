/**
 * POST /broadcasting/auth: a Pusher-protocol channel token for the caller's own private channel
 * `private-order-executed.{userId}`, signed with the WebSocket app secret so the WebSocket server
 * can check it (src/ws/channel-auth.ts). Any other channel is 403 `{"error":"Access Denied"}`, and
 * so is a socket id that is not a live connection of this server (src/ws/channel-grants.ts).
 */
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { signChannelAuth } from '../../ws/channel-auth.js';
import { isSocketId } from '../../ws/socket-id.js';
import type { V1Deps } from '../context.js';
import { ACCESS_DENIED, errorE, INVALID_REQUEST } from '../errors.js';
import { caller, markMalformed, setRawBody } from '../request-state.js';
import { ErrorESchema } from '../schemas.js';
import type { V1RouteConfig } from './plugin.js';

export const privateChannel = (userId: number): string => `private-order-executed.${userId}`;

const Body = Type.Object({
  socket_id: Type.Union([Type.String({ maxLength: 64 }), Type.Number()], {
    description: 'the connection’s socket id, `<digits>.<digits>`; a JSON number is accepted',
  }),
  channel_name: Type.String({ maxLength: 200 }),
});

/**
 * A socket id as text. A JSON number is turned back into its shortest decimal form, which is the
 * original text for the ids this server issues (their fraction never ends in 0, see socket-id.ts).
 */
function socketIdText(value: unknown): string | undefined {
  const text = typeof value === 'number' ? String(value) : value;
  return typeof text === 'string' && isSocketId(text) ? text : undefined;
}

export async function broadcastingRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();

  // pusher-js's built-in authorizer posts a form; accepting it too costs nothing. The raw bytes
  // are signed exactly like a JSON body.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer', bodyLimit: deps.config.bodyLimitBytes },
    (request: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) => {
      setRawBody(request, body);
      try {
        const text = new TextDecoder('utf-8', { fatal: true }).decode(body);
        done(null, Object.fromEntries(new URLSearchParams(text)));
      } catch {
        markMalformed(request);
        done(null, undefined);
      }
    },
  );

  app.post(
    '/broadcasting/auth',
    {
      config: { errorShape: 'E', auth: 'read' } satisfies V1RouteConfig,
      schema: {
        tags: ['websocket'],
        summary: 'Authorize a private channel subscription',
        security: [{ apiKey: [], apiSign: [] }],
        body: Body,
        response: {
          200: Type.Object({ auth: Type.String({ description: '<app key>:<hex HMAC-SHA256>' }) }),
          400: ErrorESchema,
          403: ErrorESchema,
          422: ErrorESchema,
        },
      },
    },
    async (request) => {
      const { userId, apiKey } = caller(request);
      const socketId = socketIdText(request.body.socket_id);
      if (socketId === undefined) throw errorE(400, INVALID_REQUEST);
      if (request.body.channel_name !== privateChannel(userId)) throw errorE(403, ACCESS_DENIED);
      // Remembered for the connection, so the token opens nothing once this key is revoked; a
      // socket id not connected here gets no token (docs/security.md, Revocation).
      if (
        deps.channelGrants !== undefined &&
        !deps.channelGrants.grant(socketId, privateChannel(userId), apiKey)
      )
        throw errorE(403, ACCESS_DENIED);
      return {
        auth: signChannelAuth(
          deps.config.ws.appKey,
          deps.config.ws.appSecret,
          socketId,
          request.body.channel_name,
        ),
      };
    },
  );
}
