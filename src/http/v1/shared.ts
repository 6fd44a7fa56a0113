/** Small pieces shared by the v1 route modules. */
import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageRequest } from '../../wire/serializers.js';
import type { V1Deps } from '../context.js';
import { errorE, INVALID_REQUEST } from '../errors.js';
import { parseIntInRange, single } from '../parse.js';

/** Largest `page-size` accepted on list endpoints. */
export const MAX_PAGE_SIZE = 500;
/** Largest `page` accepted: keeps offsets far inside the exact integer range. */
export const MAX_PAGE = 1_000_000_000;

export const envelope = <T>(message: string, data: T, code = 200) => ({
  success: true as const,
  message,
  data,
  code,
});

/**
 * `page-size` and `page` of a list endpoint. Undefined when `page-size` is absent: the whole list,
 * unpaginated (interface rule 1). Bad values are a 400 "Invalid request" (shape E).
 */
export function pageRequest(query: Readonly<Record<string, unknown>>): PageRequest | undefined {
  const sizeText = single(query['page-size']);
  const pageText = single(query.page);
  if (sizeText === null || pageText === null) throw errorE(400, INVALID_REQUEST);
  if (sizeText === undefined) return undefined;
  const perPage = parseIntInRange(sizeText, 1, MAX_PAGE_SIZE);
  const page = pageText === undefined || pageText === '' ? 1 : parseIntInRange(pageText, 1, MAX_PAGE);
  if (perPage === undefined || page === undefined) throw errorE(400, INVALID_REQUEST);
  return { page, perPage };
}

/** The list endpoint's URL without query string, for `meta.path`. */
export function listPath(request: FastifyRequest, deps: Pick<V1Deps, 'config'>): string {
  const path = request.url.split('?', 1)[0] ?? request.url;
  const origin = deps.config.publicUrl?.replace(/\/+$/, '') ?? `${request.protocol}://${request.host}`;
  return `${origin}${path}`;
}

/** Items of an unpaginated list read per store query and serialized per turn of the event loop. */
export const LIST_BATCH = 100;

/** One batch of a newest-first list: at most `limit` items with ids below `beforeId` (from the newest when undefined). */
export type ListBatchReader<T> = (
  beforeId: number | undefined,
  limit: number,
) => Iterable<T> | Promise<Iterable<T>>;

/**
 * The success envelope of an unpaginated list, written batch by batch: the list can be the user's
 * whole history, so it is never built as one string nor read as one query. Each batch is read
 * below the last id sent (keyset), rendered and serialized in its own turn of the event loop, so
 * other requests are served between two batches whatever the list's length, and memory holds
 * one batch plus what the client has not read yet (the stream waits for it: backpressure).
 *
 * The first batch is read before anything is sent, so a store that fails at request time still
 * gets a proper error response (503) instead of a truncated body.
 */
export async function streamList<T>(
  message: string,
  read: ListBatchReader<T>,
  idOf: (item: T) => number,
  render: (batch: readonly T[]) => readonly unknown[] | Promise<readonly unknown[]>,
  batchSize = LIST_BATCH,
): Promise<Readable> {
  let beforeId: number | undefined;
  let exhausted = false;
  const nextText = async (): Promise<string> => {
    const batch = [...(await read(beforeId, batchSize))];
    const last = batch[batch.length - 1];
    if (last === undefined || batch.length < batchSize) exhausted = true;
    else beforeId = idOf(last);
    return (await render(batch)).map((record) => JSON.stringify(record)).join(',');
  };
  const first = await nextText();
  async function* chunks(): AsyncGenerator<string> {
    yield `{"success":true,"message":${JSON.stringify(message)},"data":[${first}`;
    while (!exhausted) {
      // The next batch in a later turn: whatever else is waiting (other requests, timers) runs first.
      await setImmediate();
      const text = await nextText();
      if (text !== '') yield `,${text}`;
    }
    yield '],"code":200}';
  }
  return Readable.from(chunks(), { objectMode: false });
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Sends a JSON body serialized beforehand (a cached answer, a constant one) exactly as Fastify
 * would send the serialized object. The plain reply type takes bytes where a route's typed reply
 * only takes its schema's object.
 */
export function sendJson(reply: FastifyReply, body: Buffer, status = 200): FastifyReply {
  return reply.code(status).header('content-type', JSON_CONTENT_TYPE).send(body);
}

/** Sends a streamed JSON body. Streams bypass the response schema, so the route's typed reply is widened. */
export function sendJsonStream(reply: FastifyReply, body: Readable): FastifyReply {
  return reply.type('application/json').send(body);
}
