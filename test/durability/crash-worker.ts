/**
 * Child process of the crash test: drives the real exchange and SQLite store with orders and
 * cancels, and prints one `ACK` line per command only after `submit` resolved (i.e. committed).
 * The parent kills it with SIGKILL at a random moment.
 */
import { join } from 'node:path';
import type { Amount, AssetCode, MarketId, OrderId, Price, UserId, Volume } from '../../src/domain/types.js';
import { seedCatalogue } from '../../src/sequencer/seed.js';
import { openExchange } from '../../src/sequencer/sequencer.js';
import { asyncStore } from '../../src/store/async-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const [dir, seedText] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: crash-worker <dir> <seed>');
let seed = Number(seedText ?? 1) >>> 0;
const random = (): number => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const store = SqliteStore.open({ path: join(dir, 'openspot.db') });
const exchange = await openExchange({ store: asyncStore(store) });
const USERS = [1, 2, 3, 4] as UserId[];

async function main(): Promise<void> {
  if (await seedCatalogue(exchange, undefined)) {
    for (const userId of USERS) {
      await exchange.submit({
        kind: 'deposit',
        userId,
        asset: 'EUR' as AssetCode,
        amount: 1_000_000_0000 as Amount,
      });
      await exchange.submit({
        kind: 'deposit',
        userId,
        asset: 'BTC' as AssetCode,
        amount: 100_0000000000 as Amount,
      });
    }
  }
  const market = exchange.catalogue.marketByName('BTCEUR')!.id as MarketId;
  const open: OrderId[] = [];
  process.stdout.write('READY\n');
  // Many commands in flight at once, so kills land inside group commits, not only between them.
  for (;;) {
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      const userId = USERS[Math.floor(random() * USERS.length)]!;
      if (open.length > 0 && random() < 0.35) {
        const orderId = open.splice(Math.floor(random() * open.length), 1)[0]!;
        inFlight.push(
          exchange.submit({ kind: 'cancelOrder', userId, orderId }).then((r) => {
            if (r.ok) process.stdout.write(`ACK cancel ${orderId}\n`);
          }),
        );
      } else {
        const side = random() < 0.5 ? 'buy' : 'sell';
        const type = random() < 0.1 ? 'market' : 'limit';
        const price = (300_000 + Math.floor(random() * 200) - 100) as Price;
        const volume = (5000 + Math.floor(random() * 100_000)) as Volume;
        inFlight.push(
          exchange
            .submit({ kind: 'placeOrder', userId, marketId: market, side, type, price, volume })
            .then((r) => {
              if (!r.ok) return;
              const accepted = r.events.find((e) => e.type === 'orderAccepted');
              if (accepted?.type !== 'orderAccepted') return;
              if (type === 'limit') open.push(accepted.order.id);
              process.stdout.write(`ACK order ${accepted.order.id}\n`);
            }),
        );
      }
    }
    await Promise.all(inFlight);
  }
}

void main();
