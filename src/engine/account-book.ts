/**
 * The account book: balances with reservations (what the interface calls a wallet; once named
 * "ledger", a word that also meant deposit records and their references). Each account holds, per asset, what is available and what open
 * orders reserve; the exchange's fee account and the net deposits are kept per asset so the
 * conservation invariant (sum of available + reserved + fees = net deposits) can be checked at any time.
 * Assets are addressed by a dense index for speed; the engine maps codes to indexes.
 */
import type { Amount, AssetCode, UserId } from '../domain/types.js';
import type { AssetTotals, BalanceState } from './types.js';

export class Account {
  readonly available: number[] = [];
  readonly reserved: number[] = [];
  /**
   * Asset indexes touched since the last drain: the first `dirtyCount` entries (deduplicated
   * through `dirtyMark`). Overwritten rather than emptied at each drain, so it never regrows.
   */
  readonly dirty: number[] = [];
  dirtyCount = 0;
  readonly dirtyMark: boolean[] = [];
  /** How many orders of this user rest in the books: kept by the engine, for its per-user limit. */
  openOrders = 0;
  constructor(readonly userId: number) {}
}

/** User ids below this are looked up in a plain array (one slot per id up to the largest seen). */
const DENSE_USERS = 1 << 16;
/** A whole number from 0 to DENSE_USERS - 1 (anything else, even "5" or 5.5, goes to the Map). */
const isDense = (userId: number): boolean => userId >>> 0 === userId && userId < DENSE_USERS;

export class AccountBook {
  /** Every account, in the order opened. */
  private readonly accounts = new Map<number, Account>();
  /**
   * The accounts of user ids below DENSE_USERS by id: every order looks its owner up, and an array
   * read is cheaper than a Map probe (ids are small integers handed out in sequence). Larger ids,
   * which the engine accepts too, are only in `accounts`.
   */
  private readonly byId: (Account | undefined)[] = [];
  readonly netDeposits: number[] = [];
  readonly fees: number[] = [];
  /** Accounts with touched assets since the last drain: the first `dirtyAccountCount` entries. */
  private readonly dirtyAccounts: Account[] = [];
  private dirtyAccountCount = 0;
  private readonly dirtyTotals = new Set<number>();

  constructor(private readonly assetCode: (index: number) => AssetCode) {}

  addAsset(index: number): void {
    this.netDeposits[index] = 0;
    this.fees[index] = 0;
  }

  account(userId: number): Account {
    let account = this.peek(userId);
    if (account === undefined) {
      account = new Account(userId);
      this.accounts.set(userId, account);
      if (isDense(userId)) {
        while (this.byId.length <= userId) this.byId.push(undefined);
        this.byId[userId] = account;
      }
    }
    return account;
  }

  peek(userId: number): Account | undefined {
    return isDense(userId) ? this.byId[userId] : this.accounts.get(userId);
  }

  available(account: Account, asset: number): number {
    return account.available[asset] ?? 0;
  }

  reservedOf(account: Account, asset: number): number {
    return account.reserved[asset] ?? 0;
  }

  touch(account: Account, asset: number): void {
    if (account.dirtyMark[asset] !== true) {
      account.dirtyMark[asset] = true;
      // An account is listed when its first asset is touched (dirtyCount 0 means not listed).
      if (account.dirtyCount === 0) {
        if (this.dirtyAccountCount < this.dirtyAccounts.length)
          this.dirtyAccounts[this.dirtyAccountCount] = account;
        else this.dirtyAccounts.push(account);
        this.dirtyAccountCount++;
      }
      if (account.dirtyCount < account.dirty.length) account.dirty[account.dirtyCount] = asset;
      else account.dirty.push(asset);
      account.dirtyCount++;
    }
  }

  credit(account: Account, asset: number, amount: number): void {
    account.available[asset] = (account.available[asset] ?? 0) + amount;
    this.touch(account, asset);
  }

  debit(account: Account, asset: number, amount: number): void {
    account.available[asset] = (account.available[asset] ?? 0) - amount;
    this.touch(account, asset);
  }

  reserve(account: Account, asset: number, amount: number): void {
    account.available[asset] = (account.available[asset] ?? 0) - amount;
    account.reserved[asset] = (account.reserved[asset] ?? 0) + amount;
    this.touch(account, asset);
  }

  release(account: Account, asset: number, amount: number): void {
    if (amount === 0) return;
    account.reserved[asset] = (account.reserved[asset] ?? 0) - amount;
    account.available[asset] = (account.available[asset] ?? 0) + amount;
    this.touch(account, asset);
  }

  /** Spends from what an order reserved. */
  spendReserved(account: Account, asset: number, amount: number): void {
    account.reserved[asset] = (account.reserved[asset] ?? 0) - amount;
    this.touch(account, asset);
  }

  collectFee(asset: number, amount: number): void {
    if (amount === 0) return;
    this.fees[asset] = (this.fees[asset] ?? 0) + amount;
    this.dirtyTotals.add(asset);
  }

  changeNetDeposits(asset: number, delta: number): void {
    this.netDeposits[asset] = (this.netDeposits[asset] ?? 0) + delta;
    this.dirtyTotals.add(asset);
  }

  restoreBalance(userId: number, asset: number, available: number, reserved: number): void {
    const account = this.account(userId);
    account.available[asset] = available;
    account.reserved[asset] = reserved;
  }

  restoreTotals(asset: number, netDeposits: number, fees: number): void {
    this.netDeposits[asset] = netDeposits;
    this.fees[asset] = fees;
  }

  /** Balance rows touched since the last drain, then forgets them. */
  drainBalances(): BalanceState[] {
    const rows: BalanceState[] = [];
    for (let a = 0; a < this.dirtyAccountCount; a++) {
      const account = this.dirtyAccounts[a]!;
      for (let i = 0; i < account.dirtyCount; i++) {
        const asset = account.dirty[i]!;
        account.dirtyMark[asset] = false;
        rows.push(this.balanceRow(account, asset));
      }
      account.dirtyCount = 0;
    }
    this.dirtyAccountCount = 0;
    return rows;
  }

  drainTotals(): AssetTotals[] {
    const rows = [...this.dirtyTotals].map((asset) => this.totalsRow(asset));
    this.dirtyTotals.clear();
    return rows;
  }

  balanceRow(account: Account, asset: number): BalanceState {
    return {
      userId: account.userId as UserId,
      asset: this.assetCode(asset),
      available: (account.available[asset] ?? 0) as Amount,
      reserved: (account.reserved[asset] ?? 0) as Amount,
    };
  }

  totalsRow(asset: number): AssetTotals {
    return {
      asset: this.assetCode(asset),
      netDeposits: (this.netDeposits[asset] ?? 0) as Amount,
      fees: (this.fees[asset] ?? 0) as Amount,
    };
  }

  /** Every account, by user id (a canonical order, whatever order the accounts were opened in). */
  accountsByUser(): Account[] {
    return [...this.accounts.values()].sort((a, b) => a.userId - b.userId);
  }

  *allBalances(): Generator<BalanceState> {
    for (const account of this.accounts.values()) {
      const n = Math.max(account.available.length, account.reserved.length);
      for (let asset = 0; asset < n; asset++) {
        if ((account.available[asset] ?? 0) !== 0 || (account.reserved[asset] ?? 0) !== 0) {
          yield this.balanceRow(account, asset);
        }
      }
    }
  }

  /**
   * The conservation check, exact in BigInt: per asset, every account's available + reserved, plus
   * collected fees, must equal net deposits; and no balance may be negative.
   */
  audit(
    assetCount: number,
  ): { asset: AssetCode; held: bigint; fees: bigint; netDeposits: bigint; ok: boolean; negative: number }[] {
    const held: bigint[] = Array.from({ length: assetCount }, () => 0n);
    const negative: number[] = Array.from({ length: assetCount }, () => 0);
    for (const account of this.accounts.values()) {
      for (let asset = 0; asset < assetCount; asset++) {
        const a = account.available[asset] ?? 0;
        const r = account.reserved[asset] ?? 0;
        if (a < 0 || r < 0) negative[asset]! += 1;
        held[asset]! += BigInt(a) + BigInt(r);
      }
    }
    return held.map((h, asset) => {
      const fees = BigInt(this.fees[asset] ?? 0);
      const netDeposits = BigInt(this.netDeposits[asset] ?? 0);
      return {
        asset: this.assetCode(asset),
        held: h,
        fees,
        netDeposits,
        negative: negative[asset]!,
        ok: h + fees === netDeposits && negative[asset] === 0,
      };
    });
  }
}
