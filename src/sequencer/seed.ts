/**
 * At every start, the configured catalogue (the default one, or the operator's CATALOGUE_FILE in
 * the admin API's input shape) is made to exist: whatever asset or market of it is missing is
 * created through the ordinary command path. Declarative, so a first start killed half-way
 * through seeding is completed by the next start. Nothing is ever removed or changed.
 */
import { readFileSync } from 'node:fs';
import { assetCommand, marketCommand } from '../admin/inputs.js';
import { type CatalogueFile, DEFAULT_CATALOGUE } from '../config/default-catalogue.js';
import type { LocalExchange } from './sequencer.js';

/**
 * Returns how many assets and markets were created. `source`: a catalogue file's path, a
 * catalogue itself (an embedding caller's, e.g. the test venue's), or the default one.
 */
export async function seedCatalogue(
  exchange: LocalExchange,
  source: string | CatalogueFile | undefined,
): Promise<number> {
  const catalogue: CatalogueFile =
    source === undefined
      ? DEFAULT_CATALOGUE
      : typeof source === 'string'
        ? (JSON.parse(readFileSync(source, 'utf8')) as CatalogueFile)
        : source;
  let created = 0;
  for (const asset of catalogue.assets) {
    if (exchange.catalogue.asset(asset.code) !== undefined) continue;
    await expectOk(exchange, assetCommand(asset), `asset ${asset.code}`);
    created++;
  }
  for (const market of catalogue.markets) {
    if (exchange.catalogue.marketByName(`${market.base}/${market.quote}`) !== undefined) continue;
    await expectOk(
      exchange,
      marketCommand(market, exchange.catalogue),
      `market ${market.base}/${market.quote}`,
    );
    created++;
  }
  return created;
}

async function expectOk(
  exchange: LocalExchange,
  command: Parameters<LocalExchange['submit']>[0],
  what: string,
): Promise<void> {
  const result = await exchange.submit(command);
  if (!result.ok) throw new Error(`catalogue ${what}: ${result.error.message}`);
}
