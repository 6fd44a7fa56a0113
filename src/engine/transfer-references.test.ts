/** TransferReferences.stateHash: of the references and the entries kept, not of the order recorded. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, AssetCode, Micros, UserId } from '../domain/types.js';
import { type ReferencedEntry, TransferReferences } from './transfer-references.js';

const entry = (
  userId: number,
  reference: string | null,
  amount = 100,
  kind: 'deposit' | 'withdrawal' = 'deposit',
) =>
  ({
    userId: userId as UserId,
    asset: 'EUR' as AssetCode,
    kind,
    amount: amount as Amount,
    reference,
    time: 1_700_000_000_000_000 as Micros,
  }) satisfies ReferencedEntry;

test('references hash alike whatever order distinct ones arrived in, and differ when one differs', () => {
  const a = TransferReferences.restore([
    entry(1, 'x'),
    entry(2, 'y'),
    entry(1, null),
    entry(1, 'y', 5, 'withdrawal'),
  ]);
  const b = TransferReferences.restore([entry(1, 'y', 5, 'withdrawal'), entry(2, 'y'), entry(1, 'x')]);
  assert.equal(a.stateHash(), b.stateHash());
  // A repeated reference keeps the first entry: recording it again changes nothing.
  b.record(entry(1, 'x', 999));
  assert.equal(a.stateHash(), b.stateHash());
  const c = TransferReferences.restore([entry(1, 'x', 101), entry(2, 'y'), entry(1, 'y', 5, 'withdrawal')]);
  assert.notEqual(c.stateHash(), a.stateHash());
  const d = TransferReferences.restore([entry(1, 'x'), entry(2, 'y')]);
  assert.notEqual(d.stateHash(), a.stateHash());
  assert.notEqual(new TransferReferences().stateHash(), d.stateHash());
});
