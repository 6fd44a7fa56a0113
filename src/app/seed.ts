/**
 * First start: a data directory without assets gets the default catalogue (or the operator's
 * CATALOGUE_FILE, same JSON shape as the admin API's inputs), through the ordinary command path.
 */
import { readFileSync } from 'node:fs';
import { assetCommand, marketCommand } from '../admin/inputs.js';
import { type CatalogueFile, DEFAULT_CATALOGUE } from '../config/default-catalogue.js';
import type { OpenExchange } from './exchange.js';

export async function seedCatalogue(exchange: OpenExchange, file: string | undefined): Promise<boolean> {
  if (exchange.catalogue.assets().length > 0) return false;
  const catalogue: CatalogueFile =
    file === undefined ? DEFAULT_CATALOGUE : (JSON.parse(readFileSync(file, 'utf8')) as CatalogueFile);
  for (const asset of catalogue.assets) await expectOk(exchange, assetCommand(asset), `asset ${asset.code}`);
  for (const market of catalogue.markets) {
    await expectOk(
      exchange,
      marketCommand(market, exchange.catalogue),
      `market ${market.base}/${market.quote}`,
    );
  }
  return true;
}

async function expectOk(
  exchange: OpenExchange,
  command: Parameters<OpenExchange['submit']>[0],
  what: string,
): Promise<void> {
  const result = await exchange.submit(command);
  if (!result.ok) throw new Error(`catalogue ${what}: ${result.error.message}`);
}
