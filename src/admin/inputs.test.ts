import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CATALOGUE } from '../config/default-catalogue.js';
import { asset, fixedCatalogue } from '../http/testing/catalogue.js';
import { assetCommand, InputError, marketCommand } from './inputs.js';

const refusal = (fn: () => unknown): { field: string; message: string } => {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof InputError, String(error));
    return { field: error.field, message: error.message };
  }
  return assert.fail('accepted');
};

const token = (decimals: number) => ({ code: 'TOK', name: 'Token', type: 'crypto', decimals });

test('an asset whose precision leaves it an absurdly small exact range is refused, stating the cap', () => {
  assert.equal(assetCommand(token(10)).decimals, 10); // capped at 900,719.9254740991 units
  assert.deepEqual(
    refusal(() => assetCommand(token(12))),
    {
      field: 'decimals',
      message:
        'At 12 decimals an amount is capped at 9007.199254740991 units (2^53 - 1 of the smallest unit); ' +
        'an asset must be able to hold at least 100000 units, so it may have at most 10 decimals.',
    },
  );
  assert.match(
    refusal(() => assetCommand(token(18))).message,
    /^At 18 decimals an amount is capped at 0\.009007199254740991 units/,
  );
  assert.match(refusal(() => assetCommand(token(11))).message, /capped at 90071\.99254740991 units/);
  assert.equal(refusal(() => assetCommand(token(-1))).field, 'decimals');
  assert.equal(refusal(() => assetCommand(token(2.5))).field, 'decimals');
});

test('a market on an asset whose range is absurdly small (created before the rule) is refused, stating the cap', () => {
  const catalogue = fixedCatalogue(
    [asset('ETH', 'Ether', 'crypto', 12), asset('EUR', 'Euro', 'fiat', 2)],
    [],
  );
  const body = { base: 'ETH', quote: 'EUR', pair_decimals: 2, lot_decimals: 4, ordermin: '0.01' };
  assert.deepEqual(
    refusal(() => marketCommand(body, catalogue)),
    {
      field: 'base',
      message:
        'ETH has 12 decimals: an order in this market could move at most 9007.199254740991 ETH ' +
        '(2^53 - 1 of its smallest unit); a market needs assets that can hold at least 100000 units.',
    },
  );
  const quoted = fixedCatalogue(
    [asset('BTC', 'Bitcoin', 'crypto', 8), asset('ETH', 'Ether', 'crypto', 12)],
    [],
  );
  assert.equal(
    refusal(() => marketCommand({ ...body, base: 'BTC', quote: 'ETH', lot_decimals: 8 }, quoted)).field,
    'quote',
  );
});

test('the default catalogue passes the rules', () => {
  const assets = DEFAULT_CATALOGUE.assets.map((a) => {
    const c = assetCommand(a);
    return asset(c.code, c.name, c.type, c.decimals);
  });
  const catalogue = fixedCatalogue(assets, []);
  for (const market of DEFAULT_CATALOGUE.markets)
    assert.equal(marketCommand(market, catalogue).kind, 'createMarket');
});
