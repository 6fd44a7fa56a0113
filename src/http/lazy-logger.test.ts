import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { lazyChildLogger, lazyChildren } from './lazy-logger.js';

function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  const parent = pino({ level }, stream);
  let children = 0;
  const child = parent.child;
  // pino's children inherit from their parent object: count only the calls made on the parent.
  parent.child = function (this: typeof parent, ...args: Parameters<typeof child>) {
    if (this === parent) children += 1;
    return child.apply(this, args);
  } as typeof parent.child;
  return { parent: parent as unknown as FastifyBaseLogger, lines, children: () => children };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

test('no child logger is built for a request that logs nothing', () => {
  const { parent, children } = capture();
  const log = lazyChildLogger(parent, { reqId: 'req-1' }, {});
  assert.equal(log.level, 'info');
  assert.equal(children(), 0);
});

test('the first log line builds the child once, with the request bindings', async () => {
  const { parent, lines, children } = capture();
  const log = lazyChildLogger(parent, { reqId: 'req-2' }, {});
  log.error({ code: 42 }, 'request failed');
  log.warn('second line');
  log.debug('below the level: not written');
  await flush();
  assert.equal(children(), 1);
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.msg, l.code]),
    [
      ['req-2', 'request failed', 42],
      ['req-2', 'second line', undefined],
    ],
  );
});

test('child() and a level change go to the built child, not to the parent', async () => {
  const { parent, lines } = capture();
  const log = lazyChildLogger(parent, { reqId: 'req-3' }, {});
  log.level = 'debug';
  log.child({ part: 'auth' }).debug('nested');
  await flush();
  assert.equal(parent.level, 'info');
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.part, l.msg]),
    [['req-3', 'auth', 'nested']],
  );
});

test("lazyChildren: the logger's own children are lazy, and so are the children of a built child", async () => {
  const { parent, lines, children } = capture();
  lazyChildren(parent);
  const request = parent.child({ reqId: 'req-4' }, {});
  assert.equal(children(), 0, 'nothing built before a line is written');
  assert.equal(request.level, 'info');
  request.info('first');
  assert.equal(children(), 1);
  request.child({ part: 'auth' }).warn('nested');
  parent.child({ reqId: 'req-5' }).error('other');
  parent.info('the parent itself');
  await flush();
  assert.equal(children(), 2);
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.part, l.msg]),
    [
      ['req-4', undefined, 'first'],
      ['req-4', 'auth', 'nested'],
      ['req-5', undefined, 'other'],
      [undefined, undefined, 'the parent itself'],
    ],
  );
});
