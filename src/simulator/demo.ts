/**
 * First-start provisioning of the demo: a demo user funded in every asset, with an API key, and
 * the simulator's accounts (makers and takers), all created through the admin API. Credentials
 * are kept in DATA_DIR, mode 0600:
 *   demo-credentials.json    {url, ws_app_key, ws_host, ws_port, ws_tls, api_key, api_secret,
 *                            user_id} — also a CLI profile
 *                             (`openspot --profile DATA_DIR/demo-credentials.json balances`)
 *   simulator-accounts.json  {makers: [...], takers: [...]} in the same per-account shape
 * Later starts reuse what the files hold, after checking with the admin API that each user and
 * key still exist; only what is missing or revoked is created again. Simulator accounts are
 * topped up when a balance fell below half its target.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareDecimal } from '../client/decimal.js';
import type { SimulatorLogger } from './simulator.js';

export type AdminApi = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: unknown }>;

export interface DemoAccount {
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

export interface DemoProvision {
  readonly demo: DemoAccount;
  readonly makers: readonly DemoAccount[];
  readonly takers: readonly DemoAccount[];
  /** True when anything was created during this call. */
  readonly created: boolean;
  readonly demoFile: string;
  readonly simulatorFile: string;
}

export interface DemoOptions {
  /** `{base_url}` written into demo-credentials.json (e.g. http://127.0.0.1:8080/v1). */
  readonly url?: string;
  /** The WebSocket endpoint a pusher-js client needs (its key is public: WS_APP_KEY). */
  readonly websocket?: DemoWebSocket;
  /** Default 2. */
  readonly makers?: number;
  /** Default 3. */
  readonly takers?: number;
  /**
   * Read and write the credential files in DATA_DIR. Default true; false (an in-memory venue)
   * creates every account anew and writes nothing.
   */
  readonly files?: boolean;
}

export interface DemoWebSocket {
  readonly appKey: string;
  readonly host: string;
  readonly port: number;
  /** wss (pusher-js `forceTLS: true`) instead of ws. */
  readonly tls: boolean;
}

/**
 * Where a pusher-js client connects, from the origin clients use for the REST API (PUBLIC_URL or
 * the bound address): WebSocket upgrades are served on the same origin, under /app/.
 */
export function websocketEndpoint(origin: string, appKey: string): DemoWebSocket {
  const url = new URL(origin);
  const tls = url.protocol === 'https:';
  return {
    appKey,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? (tls ? 443 : 80) : Number(url.port),
    tls,
  };
}

export const DEMO_FILE = 'demo-credentials.json';
export const SIMULATOR_FILE = 'simulator-accounts.json';

interface AssetInfo {
  readonly code: string;
  readonly type: string;
}

/** Whole units a demo user receives; simulator accounts receive ten times as much. */
const DEMO_FUNDS: Readonly<Record<string, string>> = {
  EUR: '100000',
  USD: '100000',
  USDT: '100000',
  BTC: '10',
  ETH: '100',
};
const demoAmount = (asset: AssetInfo): bigint =>
  BigInt(DEMO_FUNDS[asset.code] ?? (asset.type === 'fiat' ? '100000' : '1000'));

/** What a demo account is funded with, per asset code (whole units as decimal strings). */
export const demoBalances = (assets: readonly AssetInfo[]): Record<string, string> =>
  Object.fromEntries(assets.map((a) => [a.code, demoAmount(a).toString()]));
const SIMULATOR_FACTOR = 10n;

interface AccountRecord {
  readonly user_id: number;
  readonly api_key: string;
  readonly api_secret: string;
}

const toRecord = (a: DemoAccount): AccountRecord => ({
  user_id: a.userId,
  api_key: a.apiKey,
  api_secret: a.apiSecret,
});

function fromRecord(value: unknown): DemoAccount | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Partial<AccountRecord>;
  if (typeof r.user_id !== 'number' || typeof r.api_key !== 'string' || typeof r.api_secret !== 'string')
    return undefined;
  return { userId: r.user_id, apiKey: r.api_key, apiSecret: r.api_secret };
}

function readJson(file: string): unknown {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Writes through a temporary file and a rename, so a crash never leaves half a file; 0600. */
function writeSecretFile(file: string, value: unknown): void {
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600); // the mode above applies only when the file is new
  renameSync(temporary, file);
}

class Provisioner {
  created = false;

  constructor(
    private readonly admin: AdminApi,
    private readonly log: SimulatorLogger,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const answer = await this.admin(method, path, body);
    if (answer.status < 200 || answer.status >= 300)
      throw new Error(`admin ${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  async assets(): Promise<AssetInfo[]> {
    return ((await this.call('GET', '/assets')) as { data: AssetInfo[] }).data;
  }

  /** True when the user exists and the key is issued to it and not revoked. */
  async stillValid(account: DemoAccount): Promise<boolean> {
    const keys = await this.admin('GET', `/users/${account.userId}/api-keys`);
    if (keys.status !== 200) return false;
    const list = (keys.body as { data?: Array<{ api_key: string; revoked_at: string | null }> }).data ?? [];
    return list.some((k) => k.api_key === account.apiKey && k.revoked_at === null);
  }

  async createAccount(email: string, funds: ReadonlyArray<readonly [string, bigint]>): Promise<DemoAccount> {
    this.created = true;
    // The email makes the account recognizable in `openspot users list`; a clash (the account
    // exists from an earlier, lost credentials file) falls back to an anonymous user.
    const withEmail = await this.admin('POST', '/users', { email });
    const user = (withEmail.status === 201 ? withEmail.body : await this.call('POST', '/users', {})) as {
      id: number;
    };
    const key = (await this.call('POST', `/users/${user.id}/api-keys`, { scopes: ['read', 'trade'] })) as {
      api_key: string;
      api_secret: string;
    };
    for (const [asset, amount] of funds) {
      await this.call('POST', `/users/${user.id}/deposits`, {
        asset,
        amount: amount.toString(),
        reference: `demo-initial-${user.id}-${asset}`,
      });
    }
    this.log.info({ userId: user.id, email }, 'demo: created an account');
    return { userId: user.id, apiKey: key.api_key, apiSecret: key.api_secret };
  }

  /** Deposits up to the target where a balance fell below half of it (long simulator runs drift). */
  async topUp(account: DemoAccount, funds: ReadonlyArray<readonly [string, bigint]>): Promise<void> {
    const balances = (await this.call('GET', `/users/${account.userId}/balances`)) as {
      data: Array<{ asset: string; total: string }>;
    };
    for (const [asset, target] of funds) {
      const total = balances.data.find((b) => b.asset === asset)?.total ?? '0';
      if (compareDecimal(total, (target / 2n).toString()) >= 0) continue;
      await this.call('POST', `/users/${account.userId}/deposits`, { asset, amount: target.toString() });
      this.log.info({ userId: account.userId, asset }, 'demo: topped up a simulator account');
    }
  }
}

/** Creates or reuses the demo user and the simulator accounts; see the module comment. */
export async function provisionDemo(
  adminApi: AdminApi,
  dataDir: string,
  log: SimulatorLogger,
  options: DemoOptions = {},
): Promise<DemoProvision> {
  const p = new Provisioner(adminApi, log);
  const assets = await p.assets();
  const demoFunds = assets.map((a) => [a.code, demoAmount(a)] as const);
  const simulatorFunds = assets.map((a) => [a.code, demoAmount(a) * SIMULATOR_FACTOR] as const);

  const files = options.files ?? true;
  const demoFile = join(dataDir, DEMO_FILE);
  const storedDemo = files ? readJson(demoFile) : undefined;
  let demo = fromRecord(storedDemo);
  if (demo === undefined || !(await p.stillValid(demo))) {
    demo = await p.createAccount('demo@openspot.local', demoFunds);
  }
  const storedUrl = (storedDemo as { url?: unknown } | undefined)?.url;
  const url = options.url ?? (typeof storedUrl === 'string' ? storedUrl : undefined);
  const ws = options.websocket;
  const demoRecord = {
    url,
    ...(ws === undefined
      ? {}
      : { ws_app_key: ws.appKey, ws_host: ws.host, ws_port: ws.port, ws_tls: ws.tls }),
    ...toRecord(demo),
  };
  if (files && JSON.stringify(storedDemo) !== JSON.stringify(demoRecord))
    writeSecretFile(demoFile, demoRecord);

  const simulatorFile = join(dataDir, SIMULATOR_FILE);
  const stored = (files ? readJson(simulatorFile) : undefined) as
    | { makers?: unknown[]; takers?: unknown[] }
    | undefined;
  const roles = { makers: options.makers ?? 2, takers: options.takers ?? 3 } as const;
  const accounts: Record<keyof typeof roles, DemoAccount[]> = { makers: [], takers: [] };
  let changed = false;
  for (const role of ['makers', 'takers'] as const) {
    for (let i = 0; i < roles[role]; i += 1) {
      const existing = fromRecord(stored?.[role]?.[i]);
      if (existing !== undefined && (await p.stillValid(existing))) {
        await p.topUp(existing, simulatorFunds);
        accounts[role].push(existing);
      } else {
        accounts[role].push(
          await p.createAccount(`sim-${role.slice(0, -1)}-${i + 1}@openspot.local`, simulatorFunds),
        );
        changed = true;
      }
    }
  }
  if (files && (changed || stored === undefined))
    writeSecretFile(simulatorFile, {
      makers: accounts.makers.map(toRecord),
      takers: accounts.takers.map(toRecord),
    });
  if (files && p.created) log.info({ file: demoFile }, 'demo: credentials written (mode 0600)');
  return {
    demo,
    makers: accounts.makers,
    takers: accounts.takers,
    created: p.created,
    demoFile,
    simulatorFile,
  };
}
