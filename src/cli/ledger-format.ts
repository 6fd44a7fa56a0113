/** The human-readable row of a deposit or withdrawal answer (`openspot deposit|withdraw`). */

export interface LedgerAnswer {
  readonly user_id: number;
  readonly asset: string;
  readonly amount: string;
  readonly reference: string | null;
  readonly duplicate: boolean;
  readonly time: string;
  readonly balance: { readonly available: string; readonly reserved: string; readonly total: string };
}

/**
 * One row: the entry, then the asset's balance after it as plain amounts. BALANCE is the total
 * (available + reserved), the figure an operator checks after moving funds; the nested object
 * would otherwise print as raw JSON.
 */
export function ledgerRow(answer: LedgerAnswer): Record<string, unknown> {
  const { balance, ...entry } = answer;
  return { ...entry, balance: balance.total, available: balance.available, reserved: balance.reserved };
}
