/**
 * What a `--standby` engine serves on ENGINE_PORT while it waits for the writer lock, so an
 * operator's monitoring sees it: /healthz 200 `{"status":"ok"}` (the process lives) and /readyz
 * 503 `{"status":"standby","reason":"waiting for the writer lock"}` (it takes nothing yet). Closed
 * once the lock is taken; the engine's own port then opens on the same port.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { listenOn } from '../http/listen.js';

export interface StandbyProbes {
  readonly url: string;
  /** The port bound (ENGINE_PORT=0 picks one; the engine then keeps it). */
  readonly port: number;
  close(): Promise<void>;
}

const STATUS = (values: readonly string[]) => ({
  type: 'object',
  properties: { status: { type: 'string', enum: values }, reason: { type: 'string' } },
});

export async function serveStandbyProbes(host: string, port: number): Promise<StandbyProbes> {
  const app: FastifyInstance = Fastify({ logger: false });
  app.get('/healthz', { schema: { response: { 200: STATUS(['ok']) } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { response: { 503: STATUS(['standby']) } } }, async (_request, reply) =>
    reply.code(503).send({ status: 'standby', reason: 'waiting for the writer lock' }),
  );
  const bound = await listenOn(app, host, port);
  return { ...bound, close: () => app.close() };
}
