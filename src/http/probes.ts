/**
 * The probes every OpenSpot process serves: /healthz (liveness) and /readyz (readiness, with why
 * when not ready). One definition for `openspot serve`, `openspot gateway` (both through
 * mountInterface) and the engine's small HTTP port, so a load balancer or supervisor reads the
 * same answer from each (docs/operations.md, "What /readyz reports").
 */
import type { FastifyInstance } from 'fastify';

export type Readiness = 'ready' | 'shutting down' | 'store unavailable';

export interface ProbeOptions {
  readonly isShuttingDown: () => boolean;
  /** False while commands are refused (the store, or for a gateway the engine, not taking them). */
  readonly isWritable: () => boolean;
  /** What /readyz names as the store (`sqlite`, `postgresql`). */
  readonly storeName: string;
  /** Called while not writable: why, in a fixed phrase (never a driver's message, which names hosts). */
  readonly unavailableReason: () => string;
  /** Something an operator should see though the process works (a cluster process's refused messages). */
  readonly alarm?: () => string | undefined;
}

/** Registers /healthz and /readyz on `app`; returns the readiness they report (for the admin health). */
export function mountProbes(app: FastifyInstance, options: ProbeOptions): () => Readiness {
  const readiness = (): Readiness =>
    options.isShuttingDown() ? 'shutting down' : options.isWritable() ? 'ready' : 'store unavailable';
  app.get('/healthz', { schema: PROBE_SCHEMAS.healthz }, async () => ({ status: 'ok' }));
  // Only a process with alarms (engine, gateway) documents and sends `alarm`: `serve` is unchanged.
  const schema = options.alarm === undefined ? PROBE_SCHEMAS.readyz : WITH_ALARM;
  app.get('/readyz', { schema }, async (_request, reply) => {
    const status = readiness();
    if (status === 'ready') {
      const alarm = options.alarm?.();
      return reply.code(200).send(alarm === undefined ? { status } : { status, alarm });
    }
    const reason = status === 'shutting down' ? 'shutting down' : options.unavailableReason();
    return reply.code(503).send({ status, store: options.storeName, reason });
  });
  return readiness;
}

const PROBE_SCHEMAS = {
  healthz: {
    tags: ['health'],
    summary: 'Liveness: the process answers',
    response: { 200: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } } },
  },
  readyz: {
    tags: ['health'],
    summary: 'Readiness: the store accepts changes and the server is not shutting down',
    response: {
      200: { type: 'object', properties: { status: { type: 'string', enum: ['ready'] } } },
      503: {
        type: 'object',
        description:
          'Not ready: a load balancer should send traffic elsewhere. `reason` says why, e.g. `database unreachable`, `database connection lost`, `database refuses connections`, `another engine took over`, `disk full` (docs/operations.md, "What /readyz reports")',
        properties: {
          status: { type: 'string', enum: ['store unavailable', 'shutting down'] },
          store: { type: 'string', enum: ['sqlite', 'postgresql'] },
          reason: { type: 'string' },
        },
      },
    },
  },
} as const;

const WITH_ALARM = {
  ...PROBE_SCHEMAS.readyz,
  response: {
    ...PROBE_SCHEMAS.readyz.response,
    200: {
      type: 'object',
      properties: {
        ...PROBE_SCHEMAS.readyz.response[200].properties,
        alarm: {
          type: 'string',
          description:
            'While recent: a message from NATS was refused or set aside (docs/cluster.md, "Locking NATS down")',
        },
      },
    },
  },
} as const;
