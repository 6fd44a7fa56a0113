/**
 * The gateway's side of the command path: `submit` and `submitOnce` with the contract of
 * Exchange.submit / Exchange.submitOnce (src/sequencer/ports.ts), carried to the engine by NATS
 * request/reply. The engine answers only after the command's batch is committed, so a resolved
 * promise means what it means in one process: durably committed.
 *
 * Failures:
 * - the engine cannot be reached (no engine subscribed, NATS connection down or closed, no answer
 *   within the timeout): EngineUnavailableError — a StoreUnavailableError, so the HTTP layer
 *   answers 503 with Retry-After as it does for a store outage. Its `outcome` says whether the
 *   command may have been applied: `not_delivered` (certainly not) or `unknown` (it was sent, the
 *   answer was lost). A command no engine received (NATS's no-responders: a failover, the standby
 *   not subscribed yet) is sent again, byte for byte under the same id, every 50 ms for up to
 *   `resendWindowMs` (2 s), so a failover is a pause rather than a 503; one that may have been
 *   received is never sent again: a caller resolves an unknown outcome itself (an Idempotency-Key
 *   retry through submitOnce, or a read of the order).
 * - the engine answered a reply too large for one NATS message with its head, and its chunks could
 *   not be fetched (the engine gone, the reply no longer held, a chunk missing or damaged, the
 *   connection lost): EngineUnavailableError, outcome `unknown` (the command was committed, or
 *   may have been), never a partial or unchecked answer.
 * - the engine's store could not commit: StoreUnavailableError, as in one process (503).
 * - a fault on the engine side or a reply this side cannot read: RemoteCommandError (500).
 *
 * Every request carries a deadline (the gateway's clock + the timeout): the engine drops a request
 * that reaches it after the deadline (plus a tolerance for clock skew), so a command answered here
 * with a timeout is not applied much later, e.g. after a NATS reconnect delivered it late. It also
 * carries a unique id, and a MAC under the cluster key over the subject, the id, the deadline and
 * the body: the engine refuses a request without a valid one, and answers an id it has seen with
 * the first answer (a captured request replayed applies nothing).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { errors, headers, type NatsConnection } from '@nats-io/transport-node';
import type { Command } from '../engine/types.js';
import type { IdempotencyRequest, LedgerRequest, OnceResult, PlaceOrder } from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import { StoreUnavailableError } from '../store/store.js';
import {
  fetchChunks,
  HEAD_FIELDS,
  type Head,
  isChunkedFrame,
  type ReadFrame,
  readFrame,
  readHead,
} from './chunked.js';
import { type ClusterKey, MAC_HEADER } from './cluster-key.js';
import {
  type CommandReply,
  type CommandRequest,
  decodeCommandReply,
  encodeCommandRequest,
  type RemoteErrorCode,
} from './codec.js';
import { ConnectionWatch } from './connection-watch.js';

/** Where commands go unless configured otherwise. */
export const DEFAULT_COMMAND_SUBJECT = 'openspot.engine.commands';
/** How long a gateway waits for the engine's answer (a commit is milliseconds; a failover is seconds). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;
/** The header holding a request's deadline, in milliseconds since the Unix epoch (decimal text). */
export const DEADLINE_HEADER = 'OpenSpot-Deadline';
/** The header holding a request's unique id (16 random bytes, base64url): the engine answers an id once. */
export const COMMAND_ID_HEADER = 'OpenSpot-Command-Id';
export const COMMAND_ID = /^[A-Za-z0-9_-]{22}$/;

/** What a command's MAC covers beside its body: where it goes, its id and its deadline. */
export function commandMacFields(subject: string, id: string, deadline: string): string[] {
  return [subject, id, deadline];
}

/** What a gateway needs of the engine: the write half of the Exchange port. */
export interface CommandSubmitter {
  submit(command: Command, ledger?: LedgerRequest): Promise<SubmitResult>;
  submitOnce(command: PlaceOrder, request: IdempotencyRequest): Promise<OnceResult>;
}

export type DeliveryOutcome = 'not_delivered' | 'unknown';

/** The engine could not be reached or did not answer in time. Maps to 503 (it is a StoreUnavailableError). */
export class EngineUnavailableError extends StoreUnavailableError {
  constructor(
    /** `not_delivered`: the command certainly changed nothing; `unknown`: it may have been applied. */
    readonly outcome: DeliveryOutcome,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    // The base class types its name as a literal; the logs should still say which error this is.
    Object.defineProperty(this, 'name', { value: 'EngineUnavailableError' });
  }
}

/** The engine answered with a fault (or with something this side cannot read). Maps to 500. */
export class RemoteCommandError extends Error {
  override readonly name = 'RemoteCommandError';
  constructor(
    readonly code: RemoteErrorCode | 'bad_reply',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * How long a command that found no engine subscribed (NATS's no-responders: certainly not
 * applied) is sent again, under the same id, before the gateway answers 503: covers a failover,
 * where the standby subscribes some hundreds of milliseconds after the primary's connection died.
 */
export const DEFAULT_RESEND_WINDOW_MS = 2_000;
const RESEND_PAUSE_MS = 50;

export interface CommandClientOptions {
  /** Every request carries a MAC under it; the engine refuses a request without a valid one. */
  readonly key: ClusterKey;
  readonly subject?: string;
  readonly timeoutMs?: number;
  /** The clock for deadlines (tests). */
  readonly now?: () => number;
  /** How long to resend a command no engine received (default DEFAULT_RESEND_WINDOW_MS; 0: never). */
  readonly resendWindowMs?: number;
}

export class CommandClient implements CommandSubmitter {
  readonly subject: string;
  readonly timeoutMs: number;
  private readonly now: () => number;
  /** The connection's state: a request fails at once while it is down, or as soon as it drops. */
  private readonly watch: ConnectionWatch;
  /** Requests sent and not yet answered: when, and how to fail one should its engine be lost. */
  private readonly sent = new Set<{ readonly at: number; lost: (error: Error) => void }>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: CommandClientOptions,
  ) {
    this.subject = options.subject ?? DEFAULT_COMMAND_SUBJECT;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs <= 0)
      throw new RangeError(`invalid command timeout: ${this.timeoutMs}`);
    this.watch = ConnectionWatch.of(nc);
  }

  async submit(command: Command, ledger?: LedgerRequest): Promise<SubmitResult> {
    const reply = await this.request(
      ledger === undefined ? { op: 'submit', command } : { op: 'submit', command, ledger },
    );
    if (reply.kind === 'result') return reply.result;
    throw new RemoteCommandError('bad_reply', `the engine answered a submit with a ${reply.kind} reply`);
  }

  async submitOnce(command: PlaceOrder, idempotency: IdempotencyRequest): Promise<OnceResult> {
    const reply = await this.request({ op: 'submitOnce', command, idempotency });
    if (reply.kind === 'once') return reply.once;
    throw new RemoteCommandError('bad_reply', `the engine answered a submitOnce with a ${reply.kind} reply`);
  }

  /**
   * The engine that was serving is gone (NATS answered no-responders to a ping sent at `since`):
   * every request sent before then and still unanswered went to it and will never be answered,
   * so it fails now, of unknown fate, instead of waiting out its timeout.
   */
  engineLost(since: number): void {
    for (const request of this.sent)
      if (request.at <= since)
        request.lost(
          new EngineUnavailableError(
            'unknown',
            'The engine was lost before it answered; the command may have been applied.',
          ),
        );
  }

  private async request(request: CommandRequest): Promise<Exclude<CommandReply, { kind: 'error' }>> {
    // Encoding errors (a command that is not plain data) are this side's bug: thrown as they are.
    const body = encodeCommandRequest(request);
    const h = headers();
    const id = randomBytes(16).toString('base64url');
    const deadline = String(this.now() + this.timeoutMs);
    h.set(COMMAND_ID_HEADER, id);
    h.set(DEADLINE_HEADER, deadline);
    h.set(MAC_HEADER, this.options.key.mac('command', commandMacFields(this.subject, id, deadline), body));
    let data: Uint8Array;
    const started = this.now();
    const resendUntil = started + (this.options.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS);
    for (;;) {
      const sent = { at: this.now(), lost: (_: Error) => {} };
      try {
        const timeout = Math.max(1, Number(deadline) - this.now());
        const lost = new Promise<never>((_, reject) => {
          sent.lost = reject;
        });
        this.sent.add(sent);
        data = (
          await Promise.race([
            this.watch.request(
              () => this.nc.request(this.subject, body, { timeout, headers: h }),
              DISCONNECTED,
            ),
            lost,
          ])
        ).data;
        break;
      } catch (error) {
        if (error instanceof EngineUnavailableError && error.outcome === 'unknown') throw error;
        const failure = error instanceof EngineUnavailableError ? error : unavailable(error);
        // No engine subscribed (a failover under way): nothing was applied, so the very same
        // request (same id, deadline and MAC) goes again until an engine takes it.
        const noEngine = error instanceof errors.RequestError && error.isNoResponders();
        if (!noEngine || this.now() + RESEND_PAUSE_MS >= Math.min(resendUntil, Number(deadline)))
          throw failure;
        await sleep(RESEND_PAUSE_MS);
      } finally {
        this.sent.delete(sent);
      }
    }
    // Only a reply too large for one message is a head followed by bytes.
    if (isChunkedFrame(data)) data = await this.fetchReply(data);
    let reply: CommandReply;
    try {
      reply = decodeCommandReply(data);
    } catch (error) {
      throw new RemoteCommandError('bad_reply', 'the engine sent a reply this gateway cannot read', {
        cause: error,
      });
    }
    if (reply.kind !== 'error') return reply;
    if (reply.code === 'unavailable') throw new StoreUnavailableError(reply.message);
    throw new RemoteCommandError(reply.code, reply.message);
  }

  /**
   * The whole reply a `reply-head` announced, fetched in chunks from the engine that answered and
   * checked (places, lengths, size, SHA-256). The command was applied, or may have been: any
   * failure here is EngineUnavailableError with outcome `unknown`, never a partial answer.
   */
  private async fetchReply(data: Uint8Array): Promise<Uint8Array> {
    let frame: ReadFrame<'reply-head'>;
    let head: Head;
    try {
      frame = readFrame(data, { 'reply-head': HEAD_FIELDS });
      head = readHead(frame.fields, this.subject);
    } catch (error) {
      throw new RemoteCommandError('bad_reply', 'the engine sent a reply this gateway cannot read', {
        cause: error,
      });
    }
    try {
      return await fetchChunks(
        async (subject, chunkRequest) =>
          (
            await this.watch.request(
              () => this.nc.request(subject, chunkRequest, { timeout: this.timeoutMs }),
              DISCONNECTED,
            )
          ).data,
        'reply',
        head,
        frame.data,
      );
    } catch (error) {
      throw new EngineUnavailableError(
        'unknown',
        `The engine's reply (${head.size} bytes in ${head.chunks} chunks) could not be fetched; the command may have been applied.`,
        { cause: error },
      );
    }
  }
}

/** What a request gets when the connection is down before it is sent, or drops before the answer. */
const DISCONNECTED = {
  notSent: () =>
    new EngineUnavailableError('not_delivered', 'The engine cannot be reached (no NATS connection).'),
  lost: () =>
    new EngineUnavailableError(
      'unknown',
      'The connection to NATS was lost before the engine answered; the command may have been applied.',
    ),
};

function unavailable(error: unknown): Error {
  if (error instanceof errors.RequestError && error.isNoResponders())
    return new EngineUnavailableError('not_delivered', 'No engine is serving commands; retry later.', {
      cause: error,
    });
  if (error instanceof errors.TimeoutError)
    return new EngineUnavailableError(
      'unknown',
      'The engine did not answer in time; the command may have been applied.',
      {
        cause: error,
      },
    );
  // Anything else (the connection closed or failed mid-request): the message may have left, so its fate is unknown.
  return new EngineUnavailableError(
    'unknown',
    'The request to the engine failed; the command may have been applied.',
    {
      cause: error,
    },
  );
}
