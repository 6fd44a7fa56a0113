/**
 * The settings the engine and the gateways share: where NATS is and how to authenticate to it,
 * the stream and subject names, and the connection itself (`connectNats`).
 *
 * NATS authentication and TLS the way NATS users configure them (docs/cluster.md has a complete
 * `nats-server` configuration with per-user permissions):
 * - `NATS_URL`: one server or a comma-separated list; `nats://user:password@host:4222` (user and
 *   password), `nats://token@host:4222` (a token); `tls://host:4222` requires TLS;
 * - `NATS_CREDS`: a `.creds` file (an NKey/JWT user of an operator-mode server), read at every
 *   (re)connection so a rotated file is picked up;
 * - `NATS_TOKEN`: a token;
 * - `NATS_TLS_CA`, `NATS_TLS_CERT`, `NATS_TLS_KEY`: files for the server's CA and this client's
 *   certificate (mutual TLS); any of them turns TLS on.
 * One way of authenticating at a time: credentials in the URL, NATS_CREDS and NATS_TOKEN exclude
 * each other (ConfigError), as a mistake there would otherwise surface as "Authorization Violation".
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import {
  type ConnectionOptions,
  connect,
  credsAuthenticator,
  type NatsConnection,
} from '@nats-io/transport-node';
import { ConfigError } from '../config/config.js';
import type { BatchStreamConfig } from './batch-stream.js';
import { ConnectionWatch } from './connection-watch.js';
import { DEFAULT_MAX_LAG_MS } from './remote-exchange.js';
import { DEFAULT_PING_SUBJECT, DEFAULT_SNAPSHOT_SUBJECT } from './snapshot.js';

/** How to reach and authenticate to NATS (no secret is logged: see `describeNats`). */
export interface NatsSettings {
  /** host:port of each server, credentials and scheme removed. */
  readonly servers: readonly string[];
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** A .creds file (NKey/JWT user). */
  readonly credsFile?: string;
  /** TLS required, with these files when given. */
  readonly tls?: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };
}

export interface ClusterSettings {
  readonly nats: NatsSettings;
  /** Stream name and subject (OPENSPOT_STREAM, OPENSPOT_STREAM_SUBJECT; tests use their own). */
  readonly stream: Partial<BatchStreamConfig>;
  /** Prefix of the command, snapshot and ping subjects (OPENSPOT_SUBJECT_PREFIX; default `openspot.engine`). */
  readonly subjectPrefix: string;
  /** A gateway: how long its view may lag a commit of the engine before /readyz fails (GATEWAY_MAX_LAG_MS). */
  readonly maxLagMs: number;
}

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/** The cluster settings from the environment; ConfigError for anything unusable. */
export function clusterSettings(env: NodeJS.ProcessEnv): ClusterSettings {
  const stream: { stream?: string; subject?: string } = {};
  if (env.OPENSPOT_STREAM) stream.stream = env.OPENSPOT_STREAM;
  if (env.OPENSPOT_STREAM_SUBJECT) stream.subject = env.OPENSPOT_STREAM_SUBJECT;
  return {
    nats: natsSettings(env),
    stream,
    subjectPrefix: env.OPENSPOT_SUBJECT_PREFIX?.trim() || 'openspot.engine',
    maxLagMs: maxLag(env.GATEWAY_MAX_LAG_MS),
  };
}

function maxLag(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return DEFAULT_MAX_LAG_MS;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 100 || ms > 3_600_000)
    throw new ConfigError(
      `GATEWAY_MAX_LAG_MS must be milliseconds from 100 to 3600000, got ${JSON.stringify(text)}`,
    );
  return ms;
}

export function natsSettings(env: NodeJS.ProcessEnv): NatsSettings {
  const urls = (env.NATS_URL?.trim() || DEFAULT_NATS_URL)
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  const parsed = urls.map(parseNatsUrl);
  const credentials = new Set(parsed.map((p) => JSON.stringify([p.user ?? null, p.pass ?? null])));
  if (credentials.size > 1)
    throw new ConfigError('NATS_URL: every server of the list must carry the same credentials (or none).');
  const { user, pass } = parsed[0]!;
  const token = env.NATS_TOKEN?.trim() || undefined;
  const credsFile = env.NATS_CREDS?.trim() || undefined;
  const ways = [
    user !== undefined && 'credentials in NATS_URL',
    token && 'NATS_TOKEN',
    credsFile && 'NATS_CREDS',
  ];
  const given = ways.filter((w): w is string => typeof w === 'string');
  if (given.length > 1)
    throw new ConfigError(`NATS: use one way of authenticating, not ${given.join(' and ')}.`);
  if (credsFile !== undefined) readable(credsFile, 'NATS_CREDS');
  const tlsFiles = {
    caFile: env.NATS_TLS_CA?.trim() || undefined,
    certFile: env.NATS_TLS_CERT?.trim() || undefined,
    keyFile: env.NATS_TLS_KEY?.trim() || undefined,
  };
  if ((tlsFiles.certFile === undefined) !== (tlsFiles.keyFile === undefined))
    throw new ConfigError('NATS_TLS_CERT and NATS_TLS_KEY go together (a client certificate and its key).');
  for (const [name, file] of [
    ['NATS_TLS_CA', tlsFiles.caFile],
    ['NATS_TLS_CERT', tlsFiles.certFile],
    ['NATS_TLS_KEY', tlsFiles.keyFile],
  ] as const)
    if (file !== undefined) readable(file, name);
  const wantsTls = parsed.some((p) => p.tls) || Object.values(tlsFiles).some((f) => f !== undefined);
  const settings: { -readonly [K in keyof NatsSettings]: NatsSettings[K] } = {
    servers: parsed.map((p) => p.server),
  };
  if (user !== undefined) {
    // `nats://token@host`: a user without a password is a token, as NATS's own clients read it.
    if (pass === undefined) settings.token = user;
    else Object.assign(settings, { user, pass });
  }
  if (token !== undefined) settings.token = token;
  if (credsFile !== undefined) settings.credsFile = credsFile;
  if (wantsTls)
    settings.tls = Object.fromEntries(Object.entries(tlsFiles).filter(([, f]) => f !== undefined));
  return settings;
}

interface ParsedUrl {
  readonly server: string;
  readonly user?: string;
  readonly pass?: string;
  readonly tls: boolean;
}

function parseNatsUrl(text: string): ParsedUrl {
  let url: URL;
  try {
    url = new URL(/^[a-z]+:\/\//i.test(text) ? text : `nats://${text}`);
  } catch {
    throw new ConfigError(
      `NATS_URL is not a URL (expected nats://host:4222), got ${JSON.stringify(redactUrl(text))}`,
    );
  }
  if (url.protocol !== 'nats:' && url.protocol !== 'tls:')
    throw new ConfigError(`NATS_URL must start with nats:// or tls:// (got ${url.protocol}//)`);
  if (url.hostname === '') throw new ConfigError('NATS_URL names no host (expected nats://host:4222)');
  const parsed: { -readonly [K in keyof ParsedUrl]: ParsedUrl[K] } = {
    server: `${url.hostname}:${url.port || '4222'}`,
    tls: url.protocol === 'tls:',
  };
  if (url.username !== '') parsed.user = decodeURIComponent(url.username);
  if (url.password !== '') parsed.pass = decodeURIComponent(url.password);
  return parsed;
}

function readable(file: string, name: string): void {
  try {
    accessSync(file, constants.R_OK);
  } catch {
    throw new ConfigError(`${name} names a file this process cannot read: ${file}`);
  }
}

/** The servers and how this process authenticates, for the log: never a secret. */
export function describeNats(nats: NatsSettings): Record<string, unknown> {
  const auth =
    nats.credsFile !== undefined
      ? 'creds'
      : nats.token !== undefined
        ? 'token'
        : nats.user !== undefined
          ? 'user'
          : 'none';
  return { servers: nats.servers, auth, tls: nats.tls !== undefined };
}

export const subjects = (prefix: string) => ({
  commands: `${prefix}.commands`,
  snapshot: prefix === 'openspot.engine' ? DEFAULT_SNAPSHOT_SUBJECT : `${prefix}.snapshot`,
  ping: prefix === 'openspot.engine' ? DEFAULT_PING_SUBJECT : `${prefix}.ping`,
  /** The engine taking commands beats here (heartbeat.ts): gateways resend at once what a lost engine took. */
  heartbeat: `${prefix}.heartbeat`,
  /** `{"userId":…}` after a key is revoked: every gateway closes that user's private subscriptions. */
  keyRevoked: `${prefix}.key-revoked`,
});

/** The client's connection options for these settings. */
export function natsConnectOptions(nats: NatsSettings, name: string): ConnectionOptions {
  const options: ConnectionOptions = {
    servers: [...nats.servers],
    name,
    timeout: 5_000,
    reconnectTimeWait: 250,
    // Reconnects for ever: NATS coming back must never need a restart of this process.
    maxReconnectAttempts: -1,
  };
  if (nats.user !== undefined) Object.assign(options, { user: nats.user, pass: nats.pass });
  if (nats.token !== undefined) options.token = nats.token;
  const { credsFile } = nats;
  if (credsFile !== undefined) options.authenticator = credsAuthenticator(() => readFileSync(credsFile));
  if (nats.tls !== undefined) options.tls = { ...nats.tls };
  return options;
}

export async function connectNats(nats: NatsSettings, name: string): Promise<NatsConnection> {
  const nc = await connect(natsConnectOptions(nats, name));
  // Watched from the start, so a request while disconnected fails at once (connection-watch.ts).
  ConnectionWatch.of(nc);
  return nc;
}

/** A NATS URL without its credentials, for the log and error messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
