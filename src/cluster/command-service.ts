/**
 * The engine's side of the command path: subscribes to the command subject and
 * hands each request to the given submitter (the engine process's Exchange), replying only once
 * that promise settles — after the commit. Requests are handed over in arrival order without
 * waiting for each other, so the sequencer still gathers them into group commits.
 *
 * A gateway sends the commands of one turn of its event loop in one message (a `commands` frame,
 * decision 272): each command under its own id, handed over in the batch's order, the whole
 * batch answered in one `replies` frame once every command is answered. Everything below about
 * a request's id (at most once, replays, receipts) holds for each command of a batch under its
 * own id; the MAC, the deadline and the late and too-far-ahead checks are the message's.
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
 * A reply too large for one NATS message (the server's max_payload; an order filling some 1,700
 * makers makes one) is held and answered with a `reply-head` in its place; the gateway fetches the
 * rest in chunks on this service's own chunk subject (chunked.ts). A reply that fits goes as it
 * is, with no extra round trip and no hashing.
 *
 * Nothing a gateway sends can crash the engine: an unreadable request is answered with a
 * `bad_request` error and applies nothing; a request without a reply subject, or reaching the
 * engine after its deadline, is dropped unapplied (nobody is waiting for its answer any more).
 *
 * Nothing that merely reaches NATS is trusted (docs/cluster.md, "What the engine and gateways
 * trust"): a request is taken only with a MAC under the cluster key over its subject, id, deadline
 * and body, a deadline no further ahead than MAX_DEADLINE_AHEAD_MS, and a command kind gateways
 * send (GATEWAY_COMMAND_KINDS); anything else is answered `refused` and applies nothing.
 *
 * At most once per id, across failovers: an id is remembered until its deadline (plus the
 * tolerance) has passed, after which the request would be dropped as late anyway, and a request
 * seen again meanwhile — a gateway's resend, a capture replayed — gets the first one's answer and
 * applies nothing. In memory for the requests this process took; and as committed state for every
 * applied command: its answer is committed with it (a command receipt, CommandIdentity), and a
 * service starting on an engine that just took the writer lock loads the receipts that have not
 * expired before it subscribes, so a gateway's resend of a command the dead engine committed is
 * answered with the dead engine's answer. (A command refused, or not committed, left no receipt:
 * its resend is applied, for the first time.)
 */
import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { CommandResult } from '../engine/types.js';
import type { CommandIdentity, OnceResult } from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import { type CommandReceipt, StoreUnavailableError } from '../store/store.js';
import { ChunkHolder, DEFAULT_MAX_PAYLOAD, type HeldTransfer } from './chunked.js';
import { type ClusterKey, MAC_HEADER } from './cluster-key.js';
import {
  type CommandMessage,
  type CommandReply,
  type CommandRequest,
  commandReplyText,
  decodeCommandMessage,
  decodeCommandReply,
  encodeCommandReplies,
  encodeCommandReply,
  GATEWAY_COMMAND_KINDS,
  receiptReplyText,
  receiptText,
} from './codec.js';
import {
  COMMAND_ID,
  COMMAND_ID_HEADER,
  type CommandSubmitter,
  commandMacFields,
  DEADLINE_HEADER,
  DEFAULT_COMMAND_SUBJECT,
} from './command-client.js';

/** How far past its deadline a request is still applied: room for clock skew between machines. */
export const DEFAULT_LATE_TOLERANCE_MS = 2_000;
/** The furthest ahead a deadline may be: bounds how long an id must be remembered. */
export const MAX_DEADLINE_AHEAD_MS = 60_000;

/**
 * How long after its expiry a command receipt is kept in the store: room for the clocks of two
 * engine machines to disagree (the one that wrote it prunes by its clock, the one that takes over
 * loads by its own). Retention in all: from the commit until the request's deadline (the gateway's
 * clock + its command deadline, DEFAULT_COMMAND_TIMEOUT_MS), plus the tolerance, plus this margin.
 */
export const RECEIPT_MARGIN_MS = 30_000;

/** How long an oversized reply is held after its last use (its head or one of its chunks was sent). */
export const REPLY_HOLD_MS = 10_000;
/** Oversized replies held at once; past it the least recently used is dropped (its gateway answers 503). */
export const MAX_HELD_REPLIES = 64;
/** Bytes of oversized replies held at once, summed (the newest is always kept). */
export const MAX_HELD_REPLY_BYTES = 256 * 1024 * 1024;

/**
 * Why a request was not applied: unreadable, nowhere to answer, too late, no valid MAC
 * (`unverified`), not a gateway's command (`operator_command`), or an id already answered (`replay`).
 */
export type DroppedReason =
  | 'bad_request'
  | 'no_reply_subject'
  | 'expired'
  | 'unverified'
  | 'operator_command'
  | 'replay';

export interface CommandServiceOptions {
  /** The cluster key every request's MAC must verify under. */
  readonly key: ClusterKey;
  readonly subject?: string;
  readonly lateToleranceMs?: number;
  readonly now?: () => number;
  /** Told about every request not applied, and about faults answered as `failed` (for the log). */
  readonly onDropped?: (reason: DroppedReason, error?: unknown) => void;
  /** Also told about a reply that could not be sent and a chunk request it could not read. */
  readonly onFailed?: (error: unknown) => void;
  /** The largest message (default: the connection's max_payload); a larger reply goes in chunks. */
  readonly maxPayload?: number;
  readonly replyHoldMs?: number;
  readonly maxHeldReplies?: number;
  readonly maxHeldReplyBytes?: number;
  /**
   * The committed receipts of commands that expire at or after the given time (the store's
   * loadCommandReceipts): loaded once, before the service subscribes. Absent: none (a service
   * whose submitter keeps no receipts).
   */
  readonly loadReceipts?: (notBefore: number) => Promise<readonly CommandReceipt[]>;
}

/** An answer, and its `reply` frame's text when it was already encoded (the receipt committed with the command). */
interface Answer {
  readonly reply: CommandReply;
  readonly text?: string;
}

export class CommandService {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly sub: Subscription;
  /** Oversized replies, fetched in chunks on `chunkSub` (this process's own subject). */
  private readonly replies: ChunkHolder;
  private readonly chunkSub: Subscription;
  private readonly now: () => number;
  private readonly lateToleranceMs: number;
  private readonly subject: string;
  /** The answer to each id seen, until its deadline (plus the tolerance) has passed; oldest first. */
  private readonly answered = new Map<
    string,
    { readonly expires: number; readonly reply: Promise<Answer> }
  >();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly submitter: CommandSubmitter,
    private readonly options: CommandServiceOptions,
    receipts: readonly CommandReceipt[],
  ) {
    this.now = options.now ?? Date.now;
    for (const receipt of receipts) {
      let reply: CommandReply;
      let text: string;
      try {
        text = receiptReplyText(receipt.reply);
        reply = decodeCommandReply(Buffer.from(text, 'utf8'));
      } catch (error) {
        // Written by this code, so not expected; a resend of that id is then applied again.
        options.onFailed?.(error);
        continue;
      }
      this.answered.set(receipt.id, { expires: receipt.expires, reply: Promise.resolve({ reply, text }) });
    }
    this.lateToleranceMs = options.lateToleranceMs ?? DEFAULT_LATE_TOLERANCE_MS;
    const subject = options.subject ?? DEFAULT_COMMAND_SUBJECT;
    this.subject = subject;
    this.sub = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error === null) this.handle(msg);
      },
    });
    // Under the command subject, which a gateway checks, and this process's own: no other engine
    // (a standby that took over) can answer for a reply it does not hold.
    const chunkSubject = `${subject}.${randomBytes(8).toString('hex')}`;
    this.replies = new ChunkHolder({
      kind: 'reply',
      chunkSubject,
      maxPayload: () => this.maxPayload(),
      holdMs: options.replyHoldMs ?? REPLY_HOLD_MS,
      maxHeld: options.maxHeldReplies ?? MAX_HELD_REPLIES,
      maxBytes: options.maxHeldReplyBytes ?? MAX_HELD_REPLY_BYTES,
      dropWhenSent: true,
      onRefused: (error) => this.options.onFailed?.(error),
    });
    this.chunkSub = nc.subscribe(chunkSubject, {
      callback: (error, msg) => {
        if (error !== null || msg.reply === undefined || msg.reply === '') return;
        try {
          msg.respond(this.replies.answer(msg.data));
        } catch (failure) {
          // No answer: the gateway's chunk request times out and it answers 503 (fate unknown).
          this.options.onFailed?.(failure);
        }
      },
    });
  }

  /**
   * Loads the committed receipts that have not expired, then subscribes and waits until the server
   * has the subscription (a request sent after this finds it).
   */
  static async start(
    nc: NatsConnection,
    submitter: CommandSubmitter,
    options: CommandServiceOptions,
  ): Promise<CommandService> {
    const now = options.now ?? Date.now;
    const receipts = (await options.loadReceipts?.(now())) ?? [];
    const service = new CommandService(nc, submitter, options, receipts);
    await nc.flush();
    return service;
  }

  /** Requests handed to the submitter and not yet answered. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Ids whose answer is remembered (for tests). */
  get remembered(): number {
    return this.answered.size;
  }

  /** Oversized replies held for their gateways (for tests and metrics). */
  get heldReplies(): number {
    return this.replies.size;
  }

  /**
   * Stops taking requests (those already delivered to this process are still handled) and
   * resolves once every one of them is answered — an oversized reply once its gateway fetched
   * every chunk, or after the reply hold time at most (a gateway that went away).
   */
  async stop(): Promise<void> {
    if (!this.sub.isClosed()) await this.sub.drain();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    if (!this.nc.isClosed()) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.replies.whenEmpty(),
        new Promise((resolve) => {
          timer = setTimeout(resolve, this.options.replyHoldMs ?? REPLY_HOLD_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    if (!this.chunkSub.isClosed()) this.chunkSub.unsubscribe();
    this.replies.clear();
    if (!this.nc.isClosed()) await this.nc.flush().catch(() => undefined);
  }

  private maxPayload(): number {
    return this.options.maxPayload ?? this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  private handle(msg: Msg): void {
    if (msg.reply === undefined || msg.reply === '') {
      this.options.onDropped?.('no_reply_subject');
      return;
    }
    const now = this.now();
    this.forgetExpired(now);
    const id = msg.headers?.get(COMMAND_ID_HEADER) ?? '';
    const deadlineText = msg.headers?.get(DEADLINE_HEADER) ?? '';
    const mac = msg.headers?.get(MAC_HEADER);
    if (
      !COMMAND_ID.test(id) ||
      !/^\d{1,15}$/.test(deadlineText) ||
      !this.options.key.verify('command', commandMacFields(this.subject, id, deadlineText), msg.data, mac)
    ) {
      this.refuse(msg, 'unverified', 'the request carries no valid MAC under the cluster key');
      return;
    }
    const deadline = Number(deadlineText);
    if (now > deadline + this.lateToleranceMs) {
      this.options.onDropped?.('expired');
      return;
    }
    if (deadline > now + MAX_DEADLINE_AHEAD_MS) {
      this.refuse(msg, 'unverified', 'the request’s deadline is too far ahead');
      return;
    }
    const expires = deadline + this.lateToleranceMs;
    const seen = this.answered.get(id);
    if (seen !== undefined) {
      this.options.onDropped?.('replay');
      this.track(seen.reply.then((reply) => this.respond(msg, reply)));
      return;
    }
    let message: CommandMessage;
    try {
      message = decodeCommandMessage(msg.data);
    } catch (error) {
      this.options.onDropped?.('bad_request', error);
      this.respond(msg, {
        reply: {
          kind: 'error',
          code: 'bad_request',
          message: error instanceof Error ? error.message : 'unreadable request',
        },
      });
      return;
    }
    if (message.kind === 'command') {
      // One command in a `command` frame (sent on its own, not by CommandClient): one `reply`.
      const reply = this.take(id, message.request, expires, now);
      this.track(reply.then((r) => this.respond(msg, r)));
      return;
    }
    // A batch: each command under its own id, taken (or answered from memory) in the batch's
    // order now, so they join the same group commit; one `replies` frame answers them all, once
    // each is answered. A resend of the batch (same bytes) finds every id it applied remembered.
    const answers = message.entries.map(({ id: entryId, request }) => {
      const entrySeen = this.answered.get(entryId);
      if (entrySeen === undefined) return this.take(entryId, request, expires, now);
      this.options.onDropped?.('replay');
      return entrySeen.reply;
    });
    this.track(Promise.all(answers).then((all) => this.respondAll(msg, all)));
  }

  /**
   * Hands one command to the submitter (now, in arrival order; only its answer is awaited) and
   * remembers its answer under its id — or answers `refused` for a command gateways may not send.
   */
  private take(id: string, request: CommandRequest, expires: number, now: number): Promise<Answer> {
    if (
      !GATEWAY_COMMAND_KINDS.has(request.command.kind) ||
      (request.op === 'submit' && request.ledger !== undefined)
    ) {
      // Not remembered: nothing was applied, and a resend is refused the same way.
      this.options.onDropped?.('operator_command');
      return Promise.resolve({
        reply: {
          kind: 'error',
          code: 'refused',
          message: `${request.command.kind} is taken only through the engine's admin API`,
        },
      });
    }
    const reply = this.answer(request, { id, expires, forgetBefore: now - RECEIPT_MARGIN_MS });
    this.answered.set(id, { expires, reply });
    return reply;
  }

  private track(answered: Promise<void>): void {
    this.inFlight.add(answered);
    void answered.finally(() => this.inFlight.delete(answered));
  }

  /** Forgets ids whose requests would now be dropped as late anyway (oldest first; a few out of order wait a little). */
  private forgetExpired(now: number): void {
    for (const [id, { expires }] of this.answered) {
      if (expires >= now) return;
      this.answered.delete(id);
    }
  }

  private refuse(msg: Msg, reason: 'unverified', message: string): void {
    this.options.onDropped?.(reason);
    this.respond(msg, { reply: { kind: 'error', code: 'refused', message } });
  }

  /**
   * The command's answer. An applied command's answer is encoded in its commit (the receipt) and
   * those bytes are the reply: what a resend is answered, here or on the next engine, is exactly
   * what the first request was.
   */
  private async answer(request: CommandRequest, id: Omit<CommandIdentity, 'encode'>): Promise<Answer> {
    let text: string | undefined;
    const identity = (wrap: (result: CommandResult) => CommandReply): CommandIdentity => ({
      ...id,
      encode: (result) => {
        text = commandReplyText(wrap(result));
        return receiptText(text);
      },
    });
    try {
      let reply: CommandReply;
      if (request.op === 'submit') {
        const result: SubmitResult = await this.submitter.submit(
          request.command,
          request.ledger,
          identity((result) => ({ kind: 'result', result })),
        );
        reply = { kind: 'result', result };
      } else {
        const once: OnceResult = await this.submitter.submitOnce(
          request.command,
          request.idempotency,
          identity((result) => ({ kind: 'once', once: { kind: 'executed', result } })),
        );
        reply = { kind: 'once', once };
      }
      // The receipt's text only when it is this answer's (a refusal, a replayed key has none).
      return text !== undefined &&
        (reply.kind === 'result' ? reply.result.ok : reply.once.kind === 'executed')
        ? { reply, text }
        : { reply };
    } catch (error) {
      if (error instanceof StoreUnavailableError)
        return { reply: { kind: 'error', code: 'unavailable', message: error.message } };
      this.options.onFailed?.(error);
      // The cause stays in the engine's log: a gateway only learns that the command failed.
      return {
        reply: {
          kind: 'error',
          code: 'failed',
          message: `the ${request.command.kind} command could not be applied`,
        },
      };
    }
  }

  private respond(msg: Msg, answer: Answer): void {
    this.send(msg, () =>
      answer.text === undefined ? encodeCommandReply(answer.reply) : Buffer.from(answer.text, 'utf8'),
    );
  }

  /** A batch's answers, in its order, in one `replies` frame (a receipt's text as it is). */
  private respondAll(msg: Msg, answers: readonly Answer[]): void {
    this.send(msg, () => encodeCommandReplies(answers.map((a) => a.text ?? commandReplyText(a.reply))));
  }

  private send(msg: Msg, encode: () => Uint8Array): void {
    let held: HeldTransfer<undefined> | undefined;
    try {
      const bytes = encode();
      // The normal case: the reply fits, and goes as it is (no hashing, no extra round trip).
      if (bytes.length <= this.maxPayload()) {
        msg.respond(bytes);
        return;
      }
      // Too large: held, and its head goes in its place; the gateway fetches the chunks.
      held = this.replies.hold(bytes, undefined);
      msg.respond(this.replies.head(held));
    } catch (error) {
      // A connection closed meanwhile: the gateway times out or sees the disconnect (outcome
      // unknown) — the command itself is committed or not, as the submitter said.
      if (held !== undefined) this.replies.release(held);
      this.options.onFailed?.(error);
    }
  }
}
