/**
 * The gateway's side of the command path: `submit` and `submitOnce` with the contract of
 * Exchange.submit / Exchange.submitOnce (src/sequencer/ports.ts), carried to the engine by NATS
 * request/reply. The engine answers only after the command's batch is committed, so a resolved
 * promise means what it means in one process: durably committed.
 *
 * The commands submitted in one turn of the event loop go together, at its end, in one message
 * (a `commands` frame, at most MAX_BATCH_COMMANDS, halved until it fits max_payload; decision
 * 272), answered in one: one MAC, one publish and one reply per turn rather than per command.
 * Below, "a request" is such a message: it is what is sent again, and what fails as a whole.
 *
 * Every command carries a unique id, and is sent again under it — byte for byte, same id,
 * deadline and MAC — until an engine answers or its deadline (the gateway's clock +
 * DEFAULT_COMMAND_TIMEOUT_MS, 5 s) passes: the engine applies an id at most once and answers a
 * resend with the first answer, from memory or, after a failover, from the receipt committed with
 * the command (command-service.ts). It goes again:
 * - 50 ms after NATS answered no-responders (no engine subscribed: a failover under way);
 * - at once when another engine starts beating (heartbeat.ts: it took over), when the engine fell
 *   silent for ENGINE_SILENT_MS (it died), or when the readiness ping found no engine
 *   (`engineLost`): a request the dead engine took is not waited out;
 * - after ATTEMPT_RESEND_MS (1 s) without an answer even while the engine beats (a lost message).
 *
 * Failures:
 * - the engine cannot be reached until the deadline, or the NATS connection is down or drops:
 *   EngineUnavailableError — a StoreUnavailableError, so the HTTP layer answers 503 with
 *   Retry-After as it does for a store outage. Its `outcome` says whether the command may have
 *   been applied: `not_delivered` (certainly not: no engine ever received it) or `unknown` (it
 *   was sent, no answer came).
 * - the engine answered a reply too large for one NATS message with its head, and its chunks could
 *   not be fetched (the engine gone, the reply no longer held, a chunk missing or damaged, the
 *   connection lost): EngineUnavailableError, outcome `unknown` (the command was committed, or
 *   may have been), never a partial or unchecked answer.
 * - the engine's store could not commit: StoreUnavailableError, as in one process (503).
 * - the engine refused the command (a kind gateways may not send, a MAC under another key, a
 *   request it cannot read): EngineRefusedError (503; nothing was applied).
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
import type {
  CommandIdentity,
  IdempotencyRequest,
  LedgerRequest,
  OnceResult,
  PlaceOrder,
} from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import { StoreUnavailableError } from '../store/store.js';
import {
  DEFAULT_MAX_PAYLOAD,
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
  decodeCommandReplies,
  type EncodedRequest,
  encodeCommandBatch,
  encodeRequestPart,
  MAX_BATCH_ENTRIES,
  type RemoteErrorCode,
  WireFormatError,
} from './codec.js';
import { ConnectionWatch } from './connection-watch.js';
import { ENGINE_SILENT_MS, type EngineHeartbeats } from './heartbeat.js';

/** Where commands go unless configured otherwise. */
export const DEFAULT_COMMAND_SUBJECT = 'openspot.engine.commands';
/**
 * A command's deadline: how long a gateway sends it (and again) before it answers 503 (a commit is
 * milliseconds; a failover well under a second here). Also what bounds how long an engine must
 * remember the id (plus its skew tolerance).
 */
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

/**
 * What a gateway needs of the engine: the write half of the Exchange port. The engine's side
 * (CommandService) also passes each command's id, so that its answer is committed with it.
 */
export interface CommandSubmitter {
  submit(command: Command, ledger?: LedgerRequest, identity?: CommandIdentity): Promise<SubmitResult>;
  submitOnce(
    command: PlaceOrder,
    request: IdempotencyRequest,
    identity?: CommandIdentity,
  ): Promise<OnceResult>;
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

/**
 * The engine refused to take the command (`refused`: a kind it takes only through its admin API,
 * or a MAC it cannot verify — a gateway whose CLUSTER_KEY differs from the engine's; `bad_request`:
 * a request it cannot read — a gateway of another version). Nothing was applied, and nothing the
 * client sent is at fault: the deployment is, so it maps to 503 with Retry-After (it is a
 * StoreUnavailableError), in the route's error shape, like an engine that cannot be reached.
 */
export class EngineRefusedError extends StoreUnavailableError {
  constructor(
    readonly code: 'refused' | 'bad_request',
    message: string,
  ) {
    super(message, { reason: 'the engine refused the gateway’s command' });
    Object.defineProperty(this, 'name', { value: 'EngineRefusedError' });
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

/** A command that found no engine subscribed (a failover under way) goes again after this pause. */
const RESEND_PAUSE_MS = 50;
/**
 * A command unanswered this long is sent again even while its engine beats (a message lost, an
 * engine that cannot answer): the engine that has it answers the resend with the same answer.
 */
export const ATTEMPT_RESEND_MS = 1_000;
/** How often unanswered commands are checked against the heartbeats (only while there are some). */
const CHECK_EVERY_MS = 50;
/**
 * The most commands one message carries (decision 272): the commands submitted in one turn of
 * the event loop go together, in messages of at most this many (and at most max_payload bytes).
 */
export const MAX_BATCH_COMMANDS = Math.min(256, MAX_BATCH_ENTRIES);

/** A command waiting for the end of this turn of the event loop, to go with the others. */
interface Queued {
  readonly request: EncodedRequest;
  resolve(reply: CommandReply): void;
  reject(error: unknown): void;
}

export interface CommandClientOptions {
  /** Every request carries a MAC under it; the engine refuses a request without a valid one. */
  readonly key: ClusterKey;
  readonly subject?: string;
  /** The command's deadline: resent until then, then 503 (default DEFAULT_COMMAND_TIMEOUT_MS). */
  readonly timeoutMs?: number;
  /** The clock for deadlines (tests). */
  readonly now?: () => number;
  /**
   * The engine's heartbeats (heartbeat.ts): a command sent to an engine that fell silent, or that
   * another engine replaced, is sent again at once. Without them, only the readiness ping's
   * finding (engineLost) and no-responders resend.
   */
  readonly heartbeats?: EngineHeartbeats;
}

/** One sending of a request, until it is answered or sent again. */
interface Attempt {
  readonly at: number;
  /** The engine heard last when it was sent. */
  readonly engine: string | undefined;
  resend(): void;
}

export class CommandClient implements CommandSubmitter {
  readonly subject: string;
  readonly timeoutMs: number;
  private readonly now: () => number;
  /** The connection's state: a request fails at once while it is down, or as soon as it drops. */
  private readonly watch: ConnectionWatch;
  /** Requests sent and not yet answered: when, to which engine, and how to send one again. */
  private readonly attempts = new Set<Attempt>();
  private checkTimer: ReturnType<typeof setInterval> | undefined;
  /** Commands submitted in this turn of the event loop, sent together at its end. */
  private queue: Queued[] = [];
  private flushScheduled = false;

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
    // Another engine beats: what was sent before it took over and is still unanswered may have
    // gone to the one it replaced, and goes again now, to it.
    options.heartbeats?.onEngine((engine) => {
      for (const attempt of this.attempts) if (attempt.engine !== engine) attempt.resend();
    });
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
   * every request sent before then and still unanswered went to it and will never be answered
   * by it, so it is sent again now, under its id, to whichever engine takes it.
   */
  engineLost(since: number): void {
    for (const attempt of this.attempts) if (attempt.at <= since) attempt.resend();
  }

  /** Checks unanswered requests against the heartbeats every CHECK_EVERY_MS while there are some. */
  private armCheck(): void {
    const heartbeats = this.options.heartbeats;
    if (heartbeats === undefined || this.checkTimer !== undefined) return;
    this.checkTimer = setInterval(() => {
      if (this.attempts.size === 0) {
        clearInterval(this.checkTimer);
        this.checkTimer = undefined;
        return;
      }
      const now = this.now();
      const silent = heartbeats.silent(now);
      for (const attempt of this.attempts) {
        const age = now - attempt.at;
        if ((silent && age > ENGINE_SILENT_MS) || age >= ATTEMPT_RESEND_MS) attempt.resend();
      }
    }, CHECK_EVERY_MS);
    this.checkTimer.unref();
  }

  /**
   * Queues the request to go at the end of this turn of the event loop, with every other command
   * submitted in it, in one message (sendBatch); its own answer, or the error it maps to.
   */
  private async request(request: CommandRequest): Promise<Exclude<CommandReply, { kind: 'error' }>> {
    // Encoding errors (a command that is not plain data) are this side's bug: thrown as they are,
    // before the command joins a batch.
    const encoded = encodeRequestPart(request);
    const reply = await new Promise<CommandReply>((resolve, reject) => {
      this.queue.push({ request: encoded, resolve, reject });
      if (this.queue.length >= MAX_BATCH_COMMANDS) this.flush();
      else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => {
          this.flushScheduled = false;
          this.flush();
        });
      }
    });
    if (reply.kind !== 'error') return reply;
    if (reply.code === 'unavailable') throw new StoreUnavailableError(reply.message);
    if (reply.code === 'refused')
      throw new EngineRefusedError(reply.code, `the engine refused the command: ${reply.message}`);
    if (reply.code === 'bad_request')
      throw new EngineRefusedError(reply.code, `the engine could not read the command: ${reply.message}`);
    throw new RemoteCommandError(reply.code, reply.message);
  }

  private flush(): void {
    if (this.queue.length === 0) return;
    const queued = this.queue;
    this.queue = [];
    void this.sendBatch(queued);
  }

  /**
   * Sends the queued commands in one `commands` message (halves of it when it would exceed
   * max_payload) and hands each its reply; a failure of the message fails each of them.
   */
  private async sendBatch(queued: readonly Queued[]): Promise<void> {
    // One id for the message (its MAC covers it) and one per command (what the engine answers at
    // most once, and commits its receipt under).
    const ids = randomBytes(16 * (queued.length + 1));
    const id = (i: number) => ids.subarray(16 * i, 16 * (i + 1)).toString('base64url');
    const body = encodeCommandBatch(queued.map((q, i) => ({ id: id(i + 1), request: q.request })));
    if (body.length > this.maxPayload() && queued.length > 1) {
      const half = Math.ceil(queued.length / 2);
      await Promise.all([this.sendBatch(queued.slice(0, half)), this.sendBatch(queued.slice(half))]);
      return;
    }
    let replies: readonly CommandReply[];
    try {
      const data = await this.exchange(body, id(0));
      try {
        replies = decodeCommandReplies(data, queued.length);
      } catch (error) {
        // An engine of another wire version could not read the batch either: nothing was applied.
        if (error instanceof WireFormatError && error.path === '$.v')
          throw new EngineRefusedError(
            'bad_request',
            `the engine speaks another wire version (${error.message}): upgrade the engine and its gateways together`,
          );
        throw new RemoteCommandError(
          'bad_reply',
          `the engine sent a reply this gateway cannot read (${error instanceof Error ? error.message : String(error)})`,
          { cause: error },
        );
      }
    } catch (error) {
      for (const q of queued) q.reject(error);
      return;
    }
    for (const [i, q] of queued.entries()) q.resolve(replies[i]!);
  }

  private maxPayload(): number {
    return this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  /**
   * Sends one message, byte for byte under the same id, deadline and MAC, until an engine answers
   * or the deadline passes: the ids of its commands make the engine apply each at most once,
   * whichever engine that is. The answer's bytes (fetched in chunks when the engine held it).
   */
  private async exchange(body: Uint8Array, id: string): Promise<Uint8Array> {
    const h = headers();
    const deadline = String(this.now() + this.timeoutMs);
    h.set(COMMAND_ID_HEADER, id);
    h.set(DEADLINE_HEADER, deadline);
    h.set(MAC_HEADER, this.options.key.mac('command', commandMacFields(this.subject, id, deadline), body));
    let data: Uint8Array;
    // Whether an engine may have received it: decides whether a 503 at the deadline says
    // `unknown` or `not_delivered`.
    let delivered = false;
    const failAtDeadline = () =>
      delivered
        ? new EngineUnavailableError(
            'unknown',
            'The engine did not answer in time; the command may have been applied.',
          )
        : new EngineUnavailableError('not_delivered', 'No engine is serving commands; retry later.');
    for (;;) {
      const timeout = Number(deadline) - this.now();
      if (timeout <= 0) throw failAtDeadline();
      let resend = () => {};
      const resent = new Promise<'resend'>((resolve) => {
        resend = () => resolve('resend');
      });
      const attempt: Attempt = { at: this.now(), engine: this.options.heartbeats?.engine, resend };
      this.attempts.add(attempt);
      this.armCheck();
      try {
        const outcome = await Promise.race([
          this.watch.request(
            () => this.nc.request(this.subject, body, { timeout, headers: h }),
            DISCONNECTED,
          ),
          resent,
        ]);
        if (outcome === 'resend') {
          delivered = true;
          continue;
        }
        data = outcome.data;
        break;
      } catch (error) {
        // The NATS connection down or lost: answered at once, as before (not a failover).
        if (error instanceof EngineUnavailableError)
          throw delivered && error.outcome === 'not_delivered' ? failAtDeadline() : error;
        if (error instanceof errors.TimeoutError) {
          delivered = true;
          throw failAtDeadline();
        }
        // No engine subscribed (the one that served died, the next not subscribed yet): nothing
        // was applied by this sending, so it goes again shortly.
        if (!(error instanceof errors.RequestError && error.isNoResponders())) {
          throw unavailable(error);
        }
        if (this.now() + RESEND_PAUSE_MS >= Number(deadline)) throw failAtDeadline();
        await sleep(RESEND_PAUSE_MS);
      } finally {
        this.attempts.delete(attempt);
      }
    }
    // Only a reply too large for one message is a head followed by bytes.
    return isChunkedFrame(data) ? await this.fetchReply(data) : data;
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
