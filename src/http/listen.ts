import type { FastifyInstance } from 'fastify';

/**
 * Starts `app` listening and says where: the port actually bound (PORT=0 picks one) and the URL
 * to reach it, an IPv6 host in brackets. Shared by `serve`, `gateway` and the engine's port.
 */
export async function listenOn(
  app: FastifyInstance,
  host: string,
  port: number,
): Promise<{ readonly url: string; readonly port: number }> {
  await app.listen({ port, host });
  const address = app.server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`, port: bound };
}
