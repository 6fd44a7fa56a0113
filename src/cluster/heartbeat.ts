/**
 * The engine's heartbeat: how a gateway learns within a few hundred milliseconds that the engine
 * serving commands is gone, or that another one took over, instead of waiting out a command's
 * deadline. The engine taking commands publishes `<prefix>.heartbeat` every HEARTBEAT_INTERVAL_MS
 * (core NATS, a few dozen bytes): its own random id and a counter, with a MAC under the cluster
 * key. The first goes out as soon as it takes commands, so a gateway resends what the previous
 * engine never answered the moment the new one can take it (command-client.ts).
 *
 * A forged or replayed heartbeat can do no harm beyond a resend (which the command's id makes
 * apply at most once) or a delayed one (the command's own resend after ATTEMPT_RESEND_MS).
 */
import { randomBytes } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { headers } from '@nats-io/transport-node';
import { type ClusterKey, MAC_HEADER } from './cluster-key.js';

export const HEARTBEAT_INTERVAL_MS = 100;
/** No heartbeat for this long: the engine is taken for gone (three beats missed, and some slack for a busy machine). */
export const ENGINE_SILENT_MS = 350;

const BODY = /^([0-9a-f]{32}) (\d{1,15})$/;

/** The engine's side: beats every `intervalMs` until stopped, the first one at once. */
export function publishHeartbeats(
  nc: NatsConnection,
  options: { readonly subject: string; readonly key: ClusterKey; readonly intervalMs?: number },
): { readonly engine: string; stop(): void } {
  const engine = randomBytes(16).toString('hex');
  const encoder = new TextEncoder();
  let beat = 0;
  const publish = () => {
    if (nc.isClosed()) return;
    const body = encoder.encode(`${engine} ${beat++}`);
    const h = headers();
    h.set(MAC_HEADER, options.key.mac('heartbeat', [options.subject], body));
    try {
      nc.publish(options.subject, body, { headers: h });
    } catch {
      // The connection is closing: the gateways notice the silence, as they should.
    }
  };
  publish();
  const timer = setInterval(publish, options.intervalMs ?? HEARTBEAT_INTERVAL_MS);
  timer.unref();
  return { engine, stop: () => clearInterval(timer) };
}

/** A gateway's side: which engine beats, and since when it has been silent. */
export class EngineHeartbeats {
  /** The id of the engine heard last; undefined until one is heard. */
  engine: string | undefined;
  /** When a heartbeat was last heard (or when watching began). */
  lastAt: number;
  private readonly listeners = new Set<(engine: string) => void>();
  private readonly sub: Subscription;
  private readonly decoder = new TextDecoder();

  private constructor(
    nc: NatsConnection,
    subject: string,
    key: ClusterKey,
    private readonly now: () => number,
  ) {
    this.lastAt = now();
    this.sub = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) return;
        if (!key.verify('heartbeat', [subject], msg.data, msg.headers?.get(MAC_HEADER))) return;
        const match = BODY.exec(this.decoder.decode(msg.data));
        if (match === null) return;
        this.lastAt = this.now();
        const engine = match[1]!;
        if (engine === this.engine) return;
        this.engine = engine;
        for (const listener of this.listeners) listener(engine);
      },
    });
  }

  /** Subscribes, and waits until the server has the subscription. */
  static async watch(
    nc: NatsConnection,
    options: { readonly subject: string; readonly key: ClusterKey; readonly now?: () => number },
  ): Promise<EngineHeartbeats> {
    const watch = new EngineHeartbeats(nc, options.subject, options.key, options.now ?? Date.now);
    await nc.flush();
    return watch;
  }

  /** Whether no heartbeat was heard for longer than ENGINE_SILENT_MS. */
  silent(now: number): boolean {
    return now - this.lastAt > ENGINE_SILENT_MS;
  }

  /** Called with the new engine's id whenever another engine than the last one heard beats. */
  onEngine(listener: (engine: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    if (!this.sub.isClosed()) this.sub.unsubscribe();
  }
}
