/**
 * Writes the sample trade file of `openspot replay` (docs/simulation.md):
 *   node --import tsx scripts/make-sample-trades.ts [FILE]
 * Default FILE: examples/replay/btceur-sample-trades.csv. The content comes from
 * src/simulator/sample-trades.ts (a seeded walk), so it is the same on every run.
 */
import { writeFileSync } from 'node:fs';
import { sampleTradeLines } from '../src/simulator/sample-trades.js';

const file = process.argv[2] ?? 'examples/replay/btceur-sample-trades.csv';
const lines = sampleTradeLines();
writeFileSync(file, `${lines.join('\n')}\n`);
process.stdout.write(`wrote ${lines.length} trades to ${file}\n`);
