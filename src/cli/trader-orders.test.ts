/** The order controls of the trader CLI: flags to order fields, and the times `--gtd` reads. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { registerTraderCommands } from './trader.js';
import {
  describeSwitch,
  orderControls,
  orderTypeFields,
  parseClientOrderId,
  parseExpiry,
  parseSwitchTimeout,
  parseTrailingOffset,
} from './trader-orders.js';

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0, 750);
const NOW_S = Math.floor(NOW / 1000);

test('no flag adds no field, so a plain order is sent as before', () => {
  assert.deepEqual(orderControls({}), {});
  assert.deepEqual(orderControls({ postOnly: false, ioc: false }), {});
});

test('each flag becomes its interface field', () => {
  assert.deepEqual(orderControls({ ioc: true }), { timeInForce: 'IOC' });
  assert.deepEqual(orderControls({ fok: true, clientId: 'take-1' }), {
    timeInForce: 'FOK',
    clientOrderId: 'take-1',
  });
  assert.deepEqual(orderControls({ gtd: NOW_S + 60, postOnly: true, stp: 'decrement' }), {
    timeInForce: 'GTD',
    expireTime: NOW_S + 60,
    postOnly: true,
    stp: 'decrement',
  });
});

test('the type flags: limit, market, and the five conditional types with their prices', () => {
  assert.deepEqual(orderTypeFields({ price: '100' }), { type: 'limit', price: '100' });
  assert.deepEqual(orderTypeFields({}), { type: 'market' });
  assert.deepEqual(orderTypeFields({ stop: '58000' }), { type: 'stop-loss', triggerPrice: '58000' });
  assert.deepEqual(orderTypeFields({ stop: '58000', limit: '57900' }), {
    type: 'stop-loss-limit',
    triggerPrice: '58000',
    price: '57900',
  });
  assert.deepEqual(orderTypeFields({ takeProfit: '65000' }), { type: 'take-profit', triggerPrice: '65000' });
  assert.deepEqual(orderTypeFields({ takeProfit: '65000', limit: '64900' }), {
    type: 'take-profit-limit',
    triggerPrice: '65000',
    price: '64900',
  });
  assert.deepEqual(orderTypeFields({ trailing: '2%' }), { type: 'trailing-stop', trailingOffset: '2%' });
  assert.deepEqual(orderTypeFields({ trailing: '150.5' }), {
    type: 'trailing-stop',
    trailingOffset: '150.5',
  });
});

test('a trailing offset is a percentage or a distance, sent as typed', () => {
  assert.equal(parseTrailingOffset('2%'), '2%');
  assert.equal(parseTrailingOffset(' 2.5% '), '2.5%');
  assert.equal(parseTrailingOffset('150.5'), '150.5');
  for (const bad of ['', '%', '2 %', '-2%', 'two', '2%%', '.5'])
    assert.throws(() => parseTrailingOffset(bad), /percentage \(2%, 2\.5%\) or a price distance/, bad);
});

test('--gtd reads durations from now, Unix seconds and ISO times with a zone', () => {
  assert.equal(parseExpiry('90s', NOW), NOW_S + 90);
  assert.equal(parseExpiry('30m', NOW), NOW_S + 1800);
  assert.equal(parseExpiry('12h', NOW), NOW_S + 43_200);
  assert.equal(parseExpiry(' 7d ', NOW), NOW_S + 604_800);
  assert.equal(parseExpiry('1767225600', NOW), 1_767_225_600);
  assert.equal(parseExpiry('2026-12-31T23:00:00Z', NOW), Date.UTC(2026, 11, 31, 23) / 1000);
  assert.equal(parseExpiry('2026-12-31T23:00:00+01:00', NOW), Date.UTC(2026, 11, 31, 22) / 1000);
  for (const bad of ['', 'soon', '-5m', '1.5h', '2026-12-31T23:00:00', '2026-12-31', '10w'])
    assert.throws(() => parseExpiry(bad, NOW), /duration from now/, bad);
});

test('client ids and switch timeouts are checked before anything is sent', () => {
  assert.equal(parseClientOrderId('a_B-9'), 'a_B-9');
  assert.equal(parseClientOrderId('x'.repeat(36)), 'x'.repeat(36));
  for (const bad of ['', 'x'.repeat(37), 'has space', 'dot.ted', 'é'])
    assert.throws(() => parseClientOrderId(bad), /1 to 36 characters/, bad);
  assert.equal(parseSwitchTimeout('0'), 0);
  assert.equal(parseSwitchTimeout('86400'), 86_400);
  for (const bad of ['86401', '-1', '1.5', '', '60s'])
    assert.throws(() => parseSwitchTimeout(bad), /0 \(off\) to 86400/, bad);
});

test("the switch's answer in words", () => {
  assert.equal(describeSwitch('0.0000'), "The dead man's switch is off.");
  assert.equal(
    describeSwitch('1764331260.5000'),
    'Unless renewed, all your open orders are canceled at 2025-11-28 12:01:00 UTC.',
  );
});

/** The message a command line is refused with, parsed in-process as `openspot` would. */
async function refusal(args: string[]): Promise<string> {
  let stderr = '';
  const program = new Command().option('--url <url>').option('--json').exitOverride();
  program.configureOutput({ writeOut: () => undefined, writeErr: (text) => (stderr += text) });
  registerTraderCommands(program);
  try {
    await program.parseAsync(['node', 'openspot', ...args]);
  } catch (error) {
    return `${stderr}${error instanceof Error ? error.message : String(error)}`;
  }
  return assert.fail(`accepted: ${args.join(' ')}`);
}

test('bad flags are refused before anything is sent', async () => {
  const order = ['order', 'buy', 'BTC/EUR', '0.01', '--price', '100'];
  const cases: Array<[string[], RegExp]> = [
    [[...order, '--ioc', '--fok'], /cannot be used with/],
    [[...order, '--fok', '--gtd', '1h'], /cannot be used with/],
    [[...order, '--gtd', 'tomorrow'], /duration from now/],
    [[...order, '--client-id', 'a b'], /1 to 36 characters/],
    [[...order, '--stp', 'never'], /Allowed choices/],
    [['cancel'], /name one order \(ID or --client-id\), or use --all/],
    [['cancel', '5', '--all'], /name one order/],
    [['cancel', '5', '--pair', 'BTC/EUR'], /--pair goes with --all/],
    [['order', 'sell', 'BTC/EUR', '0.01', '--stop', '58000', '--take-profit', '65000'], /choose one/],
    [['order', 'sell', 'BTC/EUR', '0.01', '--stop', '58000', '--trailing', '2%'], /choose one/],
    [['order', 'sell', 'BTC/EUR', '0.01', '--stop', '58000', '--price', '57900'], /limit price is --limit/],
    [['order', 'sell', 'BTC/EUR', '0.01', '--limit', '57900'], /--limit is the limit price of a --stop/],
    [['order', 'sell', 'BTC/EUR', '0.01', '--trailing', '2%', '--limit', '1'], /no --limit/],
    [['order', 'sell', 'BTC/EUR', '0.01', '--trailing', 'lots'], /percentage \(2%, 2\.5%\)/],
    [
      ['order', 'sell', 'BTC/EUR', '0.01', '--stop', '58000', '--type', 'market'],
      /--type does not go with --stop/,
    ],
    [['order', 'buy', 'BTC/EUR', '0.01', '--type', 'limit'], /a limit order needs --price/],
    [['amend', '5'], /give --price, --trigger, --volume or a combination/],
    [['dead-man', '86401'], /0 \(off\) to 86400/],
  ];
  for (const [args, message] of cases) assert.match(await refusal(args), message, args.join(' '));
});
