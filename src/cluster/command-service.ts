/**
 * The engine's side of the command path: subscribes to the command subject and
 * hands each request to the given submitter (the engine process's Exchange), replying only once
 * that promise settles — after the commit. Requests are handed over in arrival order without
 * waiting for each other, so the sequencer still gathers them into group commits.
 *
 * Only a process that holds the writer lock may start this service (a standby starts it after
 * taking the lock). A plain subscription, not a queue group: each request reaches every
 * subscriber and the first answer wins. Normally there is one. But an engine whose machine froze
 * or vanished stays subscribed until the NATS server gives up on it (its ping interval × max
 * outstanding pings: minutes by default), while the standby already took over; a queue group
 * would hand it a share of the requests, each waiting out the gateway's timeout. A second live
 * subscriber cannot apply anything: only the lock holder's commits succeed, and an engine that
 * lost the lock exits (PostgresStore's writer term).
 *
 * Nothing a gateway sends can crash the engine: an unreadable request is answered with a
 * `bad_request` error and applies nothing; a request without a reply subject, or reaching the
 * engine after its deadline, is dropped unapplied (nobody is waiting for its answer any more).
 */
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { OnceResult } from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import { StoreUnavailableError } from '../store/store.js';
import { type CommandReply, type CommandRequest, decodeCommandRequest, encodeCommandReply } from './codec.js';
import { type CommandSubmitter, DEADLINE_HEADER, DEFAULT_COMMAND_SUBJECT } from './command-client.js';

/** How far past its deadline a request is still applied: room for clock skew between machines. */
export const DEFAULT_LATE_TOLERANCE_MS = 2_000;

export type DroppedReason = 'bad_request' | 'no_reply_subject' | 'expired';

export interface CommandServiceOptions {
  readonly subject?: string;
  readonly lateToleranceMs?: number;
  readonly now?: () => number;
  /** Told about every request not applied, and about faults answered as `failed` (for the log). */
  readonly onDropped?: (reason: DroppedReason, error?: unknown) => void;
  readonly onFailed?: (error: unknown) => void;
}

export class CommandService {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly sub: Subscription;
  private readonly now: () => number;
  private readonly lateToleranceMs: number;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly submitter: CommandSubmitter,
    private readonly options: CommandServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.lateToleranceMs = options.lateToleranceMs ?? DEFAULT_LATE_TOLERANCE_MS;
    this.sub = nc.subscribe(options.subject ?? DEFAULT_COMMAND_SUBJECT, {
      callback: (error, msg) => {
        if (error === null) this.handle(msg);
      },
    });
  }

  /** Subscribes and waits until the server has the subscription (a request sent after this finds it). */
  static async start(
    nc: NatsConnection,
    submitter: CommandSubmitter,
    options: CommandServiceOptions = {},
  ): Promise<CommandService> {
    const service = new CommandService(nc, submitter, options);
    await nc.flush();
    return service;
  }

  /** Requests handed to the submitter and not yet answered. */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * Stops taking requests (those already delivered to this process are still handled) and
   * resolves once every one of them is answered.
   */
  async stop(): Promise<void> {
    if (!this.sub.isClosed()) await this.sub.drain();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    if (!this.nc.isClosed()) await this.nc.flush().catch(() => undefined);
  }

  private handle(msg: Msg): void {
    if (msg.reply === undefined || msg.reply === '') {
      this.options.onDropped?.('no_reply_subject');
      return;
    }
    // A request without a readable deadline (another client) is taken as it comes.
    const deadlineText = msg.headers?.get(DEADLINE_HEADER) ?? '';
    const deadline = /^\d{1,15}$/.test(deadlineText) ? Number(deadlineText) : undefined;
    if (deadline !== undefined && this.now() > deadline + this.lateToleranceMs) {
      this.options.onDropped?.('expired');
      return;
    }
    let request: CommandRequest;
    try {
      request = decodeCommandRequest(msg.data);
    } catch (error) {
      this.options.onDropped?.('bad_request', error);
      this.respond(msg, {
        kind: 'error',
        code: 'bad_request',
        message: error instanceof Error ? error.message : 'unreadable request',
      });
      return;
    }
    // The submitter is called now, in arrival order; only its answer is awaited.
    const answered = this.answer(request).then((reply) => this.respond(msg, reply));
    this.inFlight.add(answered);
    void answered.finally(() => this.inFlight.delete(answered));
  }

  private async answer(request: CommandRequest): Promise<CommandReply> {
    try {
      if (request.op === 'submit') {
        const result: SubmitResult = await this.submitter.submit(request.command, request.ledger);
        return { kind: 'result', result };
      }
      const once: OnceResult = await this.submitter.submitOnce(request.command, request.idempotency);
      return { kind: 'once', once };
    } catch (error) {
      if (error instanceof StoreUnavailableError)
        return { kind: 'error', code: 'unavailable', message: error.message };
      this.options.onFailed?.(error);
      // The cause stays in the engine's log: a gateway only learns that the command failed.
      return {
        kind: 'error',
        code: 'failed',
        message: `the ${request.command.kind} command could not be applied`,
      };
    }
  }

  private respond(msg: Msg, reply: CommandReply): void {
    try {
      msg.respond(encodeCommandReply(reply));
    } catch (error) {
      // An answer too large for NATS, or a connection closed meanwhile: the gateway times out
      // (outcome unknown) — the command itself is committed or not, as the submitter said.
      this.options.onFailed?.(error);
    }
  }
}
