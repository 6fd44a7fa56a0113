import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  ACCESS_DENIED,
  checkKeyPolicy,
  compareNonces,
  INVALID_NONCE,
  INVALID_REQUEST,
  ipAllowed,
  type KeyPolicyInput,
  MAX_ALLOWLIST_ENTRIES,
  nonceOfBody,
  parseAllowlist,
  parseIpRule,
  parseNonce,
} from './key-policy.js';

describe('IP allow-list entries', () => {
  test('accepts addresses and CIDR blocks, IPv4 and IPv6, in canonical text', () => {
    assert.deepEqual(parseIpRule('203.0.113.7'), {
      family: 4,
      address: '203.0.113.7',
      prefix: undefined,
      text: '203.0.113.7',
    });
    assert.equal(parseIpRule('10.0.0.0/8')?.text, '10.0.0.0/8');
    assert.equal(parseIpRule('0.0.0.0/0')?.text, '0.0.0.0/0');
    assert.equal(parseIpRule('127.0.0.1/32')?.text, '127.0.0.1/32');
    assert.equal(parseIpRule('2001:DB8::/32')?.text, '2001:db8::/32');
    assert.equal(parseIpRule('::1')?.text, '::1');
    assert.equal(parseIpRule('::ffff:10.0.0.0/104')?.text, '::ffff:10.0.0.0/104');
    assert.equal(parseIpRule('fe80::/10')?.prefix, 10);
    assert.equal(parseIpRule('::/0')?.prefix, 0);
  });

  test('refuses anything else, including blocks with host bits set', () => {
    for (const bad of [
      '',
      'localhost',
      '10.0.0',
      '256.1.1.1',
      '01.2.3.4',
      '10.0.0.0/33',
      '10.0.0.0/08',
      '10.0.0.0/',
      '10.0.0.0/-1',
      '10.0.0.0/8/8',
      '10.1.2.3/8',
      '2001:db8::1/32',
      '::ffff:10.0.0.1/104',
      '2001:db8::/129',
      'fe80::1%eth0',
      ' 10.0.0.1',
      '10.0.0.1,10.0.0.2',
      'a'.repeat(100),
    ]) {
      assert.equal(parseIpRule(bad), undefined, bad);
    }
  });

  test('a list is null (any address) or 1 to 64 valid entries, deduplicated', () => {
    assert.deepEqual(parseAllowlist(undefined), { ok: true, value: null });
    assert.deepEqual(parseAllowlist(null), { ok: true, value: null });
    assert.deepEqual(parseAllowlist([' 10.0.0.0/8', '10.0.0.0/8', '2001:DB8::1']), {
      ok: true,
      value: ['10.0.0.0/8', '2001:db8::1'],
    });
    for (const bad of [[], '10.0.0.1', [1], ['nope'], Array(MAX_ALLOWLIST_ENTRIES + 1).fill('10.0.0.1')]) {
      const result = parseAllowlist(bad);
      assert.equal(result.ok, false, JSON.stringify(bad));
      if (!result.ok) assert.match(result.message, /ip_allowlist/);
    }
  });
});

describe('IP matching', () => {
  const list = ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', '::1'];

  test('exact addresses and CIDR blocks', () => {
    assert.equal(ipAllowed(list, '10.0.0.1'), true);
    assert.equal(ipAllowed(list, '10.255.255.255'), true);
    assert.equal(ipAllowed(list, '11.0.0.0'), false);
    assert.equal(ipAllowed(list, '9.255.255.255'), false);
    assert.equal(ipAllowed(list, '192.0.2.7'), true);
    assert.equal(ipAllowed(list, '192.0.2.8'), false);
    assert.equal(ipAllowed(list, '2001:db8:ffff::1'), true);
    assert.equal(ipAllowed(list, '2001:0DB8:0000::0001'), true);
    assert.equal(ipAllowed(list, '2001:db9::1'), false);
    assert.equal(ipAllowed(list, '::1'), true);
    assert.equal(ipAllowed(list, '::2'), false);
    assert.equal(ipAllowed(list, '127.0.0.1'), false);
  });

  test('IPv4-mapped IPv6 addresses match IPv4 rules, and mapped rules match IPv4 addresses', () => {
    assert.equal(ipAllowed(list, '::ffff:10.1.2.3'), true);
    assert.equal(ipAllowed(list, '::FFFF:192.0.2.7'), true);
    assert.equal(ipAllowed(list, '::ffff:11.1.2.3'), false);
    assert.equal(ipAllowed(['::ffff:127.0.0.0/104'], '127.0.0.1'), true);
    assert.equal(ipAllowed(['::ffff:127.0.0.0/104'], '128.0.0.1'), false);
    assert.equal(ipAllowed(['127.0.0.1/32'], '::ffff:127.0.0.1'), true);
  });

  test('an IPv4 block never matches native IPv6 (0.0.0.0/0 is not "everything")', () => {
    assert.equal(ipAllowed(['0.0.0.0/0'], '8.8.8.8'), true);
    assert.equal(ipAllowed(['0.0.0.0/0'], '::1'), false);
    assert.equal(ipAllowed(['::/0'], '2001:db8::1'), true);
  });

  test('null allows any address; garbage and zoned addresses are refused, never thrown', () => {
    assert.equal(ipAllowed(null, 'anything'), true);
    assert.equal(ipAllowed(list, ''), false);
    assert.equal(ipAllowed(list, 'not an ip'), false);
    assert.equal(ipAllowed(list, undefined as unknown as string), false);
    assert.equal(ipAllowed(['fe80::/10'], 'fe80::1%eth0'), true);
    assert.equal(ipAllowed(list, 'fe80::1%eth0'), false);
  });

  test('matches the prefix arithmetic on random IPv4 blocks', () => {
    const toIp = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
    fc.assert(
      fc.property(
        fc.nat(2 ** 32 - 1),
        fc.integer({ min: 0, max: 32 }),
        fc.nat(2 ** 32 - 1),
        (a, prefix, b) => {
          const size = 2 ** (32 - prefix);
          const network = Math.floor(a / size) * size;
          const rule = `${toIp(network)}/${prefix}`;
          assert.ok(parseIpRule(rule), rule);
          const inside = Math.floor(b / size) === Math.floor(network / size);
          assert.equal(ipAllowed([rule], toIp(b)), inside, `${toIp(b)} in ${rule}`);
          // Host bits set: refused unless the block is a single address.
          if (a !== network) assert.equal(parseIpRule(`${toIp(a)}/${prefix}`), undefined);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('nonces', () => {
  test('values: digit strings up to 20 digits, or safe non-negative JSON integers', () => {
    assert.equal(parseNonce('1'), '1');
    assert.equal(parseNonce('0'), '0');
    assert.equal(parseNonce('000'), '0');
    assert.equal(parseNonce('0042'), '42');
    assert.equal(parseNonce('99999999999999999999'), '99999999999999999999');
    assert.equal(parseNonce(1712345678901), '1712345678901');
    assert.equal(parseNonce(Number.MAX_SAFE_INTEGER), '9007199254740991');
    assert.equal(parseNonce(-0), '0');
    for (const bad of [
      '',
      '123456789012345678901',
      '-1',
      '+1',
      '1.0',
      ' 1',
      '1e3',
      '０',
      1.5,
      -1,
      2 ** 53,
      Number.NaN,
      null,
      true,
      [1],
      { n: 1 },
    ]) {
      assert.equal(parseNonce(bad), undefined, JSON.stringify(bad));
    }
  });

  test('comparison is numeric and exact beyond 2^53 (checked against BigInt)', () => {
    const digits = fc.stringMatching(/^(0|[1-9][0-9]{0,19})$/);
    fc.assert(
      fc.property(digits, digits, (a, b) => {
        const x = BigInt(a);
        const y = BigInt(b);
        assert.equal(compareNonces(a, b), x < y ? -1 : x > y ? 1 : 0);
      }),
      { numRuns: 2000 },
    );
    assert.equal(compareNonces('10', '9'), 1);
    assert.equal(compareNonces('9007199254740993', '9007199254740992'), 1);
  });

  test('read from the signed bytes: JSON object member, or one form parameter', () => {
    const json = (text: string) => nonceOfBody('POST', Buffer.from(text), 'application/json');
    assert.deepEqual(json('{"nonce":"17","pair":"BTC/EUR"}'), { kind: 'nonce', value: '17' });
    assert.deepEqual(json('{"pair":"BTC/EUR","nonce":17}'), { kind: 'nonce', value: '17' });
    assert.deepEqual(json('\ufeff{"nonce":1}'), { kind: 'nonce', value: '1' });
    // JSON.parse keeps the last duplicate, as the route's own parser does.
    assert.deepEqual(json('{"nonce":1,"nonce":2}'), { kind: 'nonce', value: '2' });
    assert.deepEqual(json('{"pair":"BTC/EUR"}'), { kind: 'invalid' });
    assert.deepEqual(json('{"nonce":"x"}'), { kind: 'invalid' });
    assert.deepEqual(json('{"nonce":12345678901234567890}'), { kind: 'invalid' }, 'unsafe JSON number');
    assert.deepEqual(json('[{"nonce":1}]'), { kind: 'invalid' });
    assert.deepEqual(json('"1"'), { kind: 'invalid' });
    assert.deepEqual(json('{"nonce":'), { kind: 'malformed' });
    assert.deepEqual(json('   '), { kind: 'malformed' });
    assert.deepEqual(nonceOfBody('POST', Buffer.from([0x7b, 0xff, 0x7d])), { kind: 'malformed' });

    const form = (text: string) =>
      nonceOfBody('POST', Buffer.from(text), 'application/x-www-form-urlencoded; charset=utf-8');
    assert.deepEqual(form('socket_id=1.2&nonce=5'), { kind: 'nonce', value: '5' });
    assert.deepEqual(form('socket_id=1.2'), { kind: 'invalid' });
    assert.deepEqual(form('nonce=5&nonce=6'), { kind: 'invalid' });

    assert.deepEqual(nonceOfBody('GET', Buffer.from('{"nonce":1}')), { kind: 'no-body' });
    assert.deepEqual(nonceOfBody('DELETE', Buffer.alloc(0)), { kind: 'no-body' });
    assert.deepEqual(nonceOfBody('DELETE', Buffer.from('{"nonce":3}'), 'application/json'), {
      kind: 'nonce',
      value: '3',
    });
  });
});

describe('checkKeyPolicy', () => {
  /** A store that behaves like SqliteStore.acceptNonce, recording the calls. */
  function fakeStore() {
    let last: bigint | undefined;
    const calls: string[] = [];
    return {
      calls,
      async acceptNonce(_key: string, nonce: string) {
        calls.push(nonce);
        if (last !== undefined && BigInt(nonce) <= last) return false;
        last = BigInt(nonce);
        return true;
      },
    };
  }
  const input = (over: Partial<KeyPolicyInput> & Pick<KeyPolicyInput, 'store'>): KeyPolicyInput => ({
    record: { key: 'k', ipAllowlist: null, nonceRequired: false },
    ip: '127.0.0.1',
    method: 'POST',
    rawBody: Buffer.from('{"pair":"BTC/EUR"}'),
    contentType: 'application/json',
    ...over,
  });
  const order = (nonce: unknown) => Buffer.from(JSON.stringify({ pair: 'BTC/EUR', nonce }));

  test('a key without options: nothing to check, no nonce spent', async () => {
    const store = fakeStore();
    assert.deepEqual(await checkKeyPolicy(input({ store })), { ok: true });
    assert.deepEqual(store.calls, []);
  });

  test('allow-list: 403 Access Denied from elsewhere, before the rate limit and the nonce', async () => {
    const store = fakeStore();
    let limited = 0;
    const count = () => {
      limited += 1;
    };
    const record = { key: 'k', ipAllowlist: ['10.0.0.0/8'], nonceRequired: true };
    const refused = await checkKeyPolicy(input({ store, record, rawBody: order('1'), rateLimit: count }));
    assert.deepEqual(refused, { ok: false, status: 403, error: ACCESS_DENIED });
    assert.equal(limited, 0);
    assert.deepEqual(store.calls, []);
    const allowed = await checkKeyPolicy(
      input({ store, record, ip: '10.9.8.7', rawBody: order('1'), rateLimit: count }),
    );
    assert.deepEqual(allowed, { ok: true });
    assert.equal(limited, 1);
  });

  test('the rate limit runs before the nonce is spent: a limited request keeps its nonce usable', async () => {
    const store = fakeStore();
    const record = { key: 'k', ipAllowlist: null, nonceRequired: true };
    assert.throws(
      () =>
        checkKeyPolicy(
          input({
            store,
            record,
            rawBody: order('5'),
            rateLimit: () => {
              throw new Error('429');
            },
          }),
        ),
      /429/,
    );
    assert.deepEqual(store.calls, []);
    assert.deepEqual(await checkKeyPolicy(input({ store, record, rawBody: order('5') })), { ok: true });
  });

  test('nonces: increasing accepted, replays and smaller refused with 422 Invalid Nonce', async () => {
    const store = fakeStore();
    const record = { key: 'k', ipAllowlist: null, nonceRequired: true };
    const check = (rawBody: Buffer, method = 'POST') =>
      checkKeyPolicy(input({ store, record, rawBody, method }));
    const invalid = { ok: false, status: 422, error: INVALID_NONCE };
    assert.deepEqual(await check(order('1')), { ok: true });
    assert.deepEqual(await check(order('1')), invalid);
    assert.deepEqual(await check(order(2)), { ok: true });
    assert.deepEqual(await check(order('0002')), invalid);
    assert.deepEqual(await check(order('18446744073709551616')), { ok: true });
    assert.deepEqual(await check(order(3)), invalid);
    assert.deepEqual(await check(Buffer.from('{"pair":"BTC/EUR"}')), invalid, 'missing');
    assert.deepEqual(await check(order('abc')), invalid);
    assert.deepEqual(await check(Buffer.from('{"pair":')), {
      ok: false,
      status: 400,
      error: INVALID_REQUEST,
    });
    // GET and HEAD carry no body: they need no nonce (and spend none). Any other method
    // must carry one: a body-less DELETE would be a signature valid for every order id.
    const before = store.calls.length;
    assert.deepEqual(await check(Buffer.alloc(0), 'GET'), { ok: true });
    assert.deepEqual(await check(Buffer.alloc(0), 'HEAD'), { ok: true });
    assert.deepEqual(await check(Buffer.alloc(0), 'DELETE'), invalid);
    assert.deepEqual(await check(Buffer.alloc(0), 'POST'), invalid);
    assert.equal(store.calls.length, before);
  });
});
