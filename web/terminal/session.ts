/**
 * The signed-in account. No server-side session: the API key and secret stay in the browser and
 * every private request is signed here (WebCrypto). They are kept in sessionStorage (gone when the
 * tab closes), or in localStorage only after the user ticked "Remember on this device".
 */
import type { Order, PagedEnvelope } from '../../src/client/types.js';
import { type Credentials, SignedClient } from '../shared/api.js';

const KEY = 'openspot.terminal.credentials';

export interface StoredAccount extends Credentials {
  /** For `private-order-executed.{userId}`; learnt from the demo file or the first order seen. */
  readonly userId?: number;
}

export interface Session {
  readonly client: SignedClient;
  readonly account: StoredAccount;
  readonly remembered: boolean;
}

function read(storage: Storage): StoredAccount | undefined {
  try {
    const raw = storage.getItem(KEY);
    if (raw === null) return undefined;
    const parsed = JSON.parse(raw) as Partial<StoredAccount>;
    if (typeof parsed.apiKey !== 'string' || typeof parsed.apiSecret !== 'string') return undefined;
    return {
      apiKey: parsed.apiKey,
      apiSecret: parsed.apiSecret,
      ...(typeof parsed.userId === 'number' ? { userId: parsed.userId } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The account kept by an earlier visit, if any. */
export function restore(): Session | undefined {
  const remembered = read(localStorage);
  if (remembered !== undefined) return open(remembered, true);
  const session = read(sessionStorage);
  return session === undefined ? undefined : open(session, false);
}

export function open(account: StoredAccount, remember: boolean): Session {
  return { client: new SignedClient(account), account, remembered: remember };
}

/** Keeps the account where the user chose, and nowhere else. */
export function keep(session: Session): void {
  const text = JSON.stringify(session.account);
  if (session.remembered) {
    localStorage.setItem(KEY, text);
    sessionStorage.removeItem(KEY);
  } else {
    sessionStorage.setItem(KEY, text);
    localStorage.removeItem(KEY);
  }
}

export function forget(): void {
  localStorage.removeItem(KEY);
  sessionStorage.removeItem(KEY);
}

/**
 * The account's user id, which names its private channel. The interface has no "who am I": it is
 * the `user_id` of any of the account's orders. Undefined while the account has none.
 */
export async function discoverUserId(client: SignedClient): Promise<number | undefined> {
  for (const path of ['/open-orders', '/closed-orders']) {
    const page = await client.request<PagedEnvelope<Order>>('GET', path, { query: { 'page-size': 1 } });
    const id = page.data[0]?.user_id;
    if (typeof id === 'number') return id;
  }
  return undefined;
}
