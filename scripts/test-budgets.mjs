// Time budgets for the tests of `npm test`: scripts/run-tests.mjs loads this module into every test
// process (`--import`), so a test that hangs fails, with its name, instead of stalling the run.
//
// Node 20's own `--test-timeout` is no per-test budget: under `--test` it bounds each whole test
// file, and without `--test` it does nothing (nodejs/node#57656, changed in later versions). So:
// - every test and hook that states no `timeout`, and is in no `describe` that states one, gets
//   TEST_TIMEOUT_MS (default 120 s): an await that never settles fails that test, and the file
//   goes on. A test that needs longer says so with its own `{ timeout }`;
// - a synchronous endless loop blocks the event loop, so no timer of the test process can end it:
//   a watchdog thread notices that the main thread has stopped ticking and, once that has lasted
//   longer than any budget of the file (the largest stated, at least the default) plus a margin,
//   says so on stderr and kills the process. The file fails; the run goes on with the next one.
import { writeSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { Worker } from 'node:worker_threads';

const DEFAULT_MS = Number(process.env.TEST_TIMEOUT_MS ?? 120_000);
/** What a blocked event loop is allowed beyond the largest budget before the process is killed. */
const MARGIN_MS = 30_000;

// [0]: when the main thread last ran (ms since ORIGIN); [1]: the largest budget seen in this file.
const shared = new Int32Array(new SharedArrayBuffer(8));
const ORIGIN = Date.now();
Atomics.store(shared, 1, DEFAULT_MS);
const notice = (ms) => {
  if (Number.isFinite(ms) && ms > Atomics.load(shared, 1))
    Atomics.store(shared, 1, Math.min(ms, 2 ** 31 - 1));
};

// Budgets of the suites whose bodies are being run (the innermost last), as their tests register.
// A test registered after an `await` in an async describe body gets the default instead.
const suiteBudgets = [];
const inheritedBudget = () => suiteBudgets.at(-1);

/** The arguments of test(name?, options?, fn?), hook(fn?, options?) and describe(...) by kind. */
const parts = (args) => ({
  name: args.find((a) => typeof a === 'string'),
  options: args.find((a) => typeof a === 'object' && a !== null) ?? {},
  fn: args.find((a) => typeof a === 'function'),
});

const nodeTest = createRequire(import.meta.url)('node:test');

/** test / it: their own budget, else the enclosing suite's, else the default. */
const budgetedTest = (original) =>
  Object.assign(
    (...args) => {
      const { name, options, fn } = parts(args);
      notice(options.timeout);
      const timeout = options.timeout ?? inheritedBudget() ?? DEFAULT_MS;
      return original(name, { ...options, timeout }, fn);
    },
    { skip: original.skip, todo: original.todo, only: original.only },
  );

/** describe / suite: no budget of their own unless stated; a stated one is inherited by their tests. */
const budgetedSuite = (original) =>
  Object.assign(
    (...args) => {
      const { name, options, fn } = parts(args);
      notice(options.timeout);
      const budget = options.timeout ?? inheritedBudget();
      const body =
        fn === undefined
          ? undefined
          : function (...suiteArgs) {
              suiteBudgets.push(budget);
              try {
                return fn.apply(this, suiteArgs);
              } finally {
                suiteBudgets.pop();
              }
            };
      return original(name, options, body);
    },
    { skip: original.skip, todo: original.todo, only: original.only },
  );

/** before / after / beforeEach / afterEach: always bounded (a hook inherits no budget in Node 20). */
const budgetedHook =
  (original) =>
  (...args) => {
    const { options, fn } = parts(args);
    notice(options.timeout);
    return original(fn, { ...options, timeout: options.timeout ?? inheritedBudget() ?? DEFAULT_MS });
  };

for (const key of ['test', 'it']) nodeTest[key] = budgetedTest(nodeTest[key]);
for (const key of ['describe', 'suite']) nodeTest[key] = budgetedSuite(nodeTest[key]);
for (const key of ['before', 'after', 'beforeEach', 'afterEach']) nodeTest[key] = budgetedHook(nodeTest[key]);
// `import { test } from 'node:test'` is a live binding of these properties: brought in step here.
// (The default export, `import test from 'node:test'`, stays unbudgeted: no test file uses it.)
syncBuiltinESMExports();

setInterval(() => Atomics.store(shared, 0, Date.now() - ORIGIN), 500).unref();
const watchdog = new Worker(
  `const { workerData: { shared, origin, margin, file } } = require('node:worker_threads');
   const { writeSync } = require('node:fs');
   setInterval(() => {
     const blocked = Date.now() - origin - Atomics.load(shared, 0);
     const budget = Atomics.load(shared, 1);
     if (blocked <= budget + margin) return;
     writeSync(2, '\\n# test-budgets: ' + file + ': the event loop has been blocked for ' + Math.round(blocked / 1000) +
       ' s, longer than any test budget of this file (' + Math.round(budget / 1000) + ' s): a synchronous endless loop? The process is killed.\\n');
     process.kill(process.pid, 'SIGKILL');
   }, 1000);`,
  {
    eval: true,
    workerData: { shared, origin: ORIGIN, margin: MARGIN_MS, file: process.argv[1] ?? 'a test file' },
  },
);
watchdog.unref();
// A failure to start the watchdog leaves the per-test budgets working: say so, do not crash.
watchdog.on('error', (error) => writeSync(2, `# test-budgets: the watchdog thread failed: ${error}\n`));
