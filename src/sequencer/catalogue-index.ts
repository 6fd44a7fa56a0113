/**
 * The catalogue's lookups (by code, by id, by joined and slash market names), kept by a
 * MarketView from the feed (the one catalogue of a process, engine or gateway). Readers get
 * frozen lists, renewed only when the catalogue changes.
 */
import type { AssetSpec, MarketId, MarketSpec } from '../domain/types.js';
import type { Catalogue } from './ports.js';

export class CatalogueIndex implements Catalogue {
  private assetList: readonly AssetSpec[] = Object.freeze([]);
  private marketList: readonly MarketSpec[] = Object.freeze([]);
  private readonly marketsById = new Map<MarketId, MarketSpec>();
  private readonly marketsByName = new Map<string, MarketSpec>();
  private readonly assetsByCode = new Map<string, AssetSpec>();

  constructor(assets: readonly AssetSpec[] = [], markets: readonly MarketSpec[] = []) {
    this.replace(assets, markets);
  }

  /** Indexes a whole catalogue afresh (copied: the caller's lists may grow later). */
  replace(assets: readonly AssetSpec[], markets: readonly MarketSpec[]): void {
    this.assetsByCode.clear();
    this.marketsById.clear();
    this.marketsByName.clear();
    for (const asset of assets) this.indexAsset(asset);
    for (const market of markets) this.indexMarket(market);
    this.assetList = Object.freeze([...assets]);
    this.marketList = Object.freeze([...markets]);
  }

  addAsset(asset: AssetSpec): void {
    this.indexAsset(asset);
    this.assetList = Object.freeze([...this.assetList, asset]);
  }

  addMarket(market: MarketSpec): void {
    this.indexMarket(market);
    this.marketList = Object.freeze([...this.marketList, market]);
  }

  assets(): readonly AssetSpec[] {
    return this.assetList;
  }
  asset(code: string): AssetSpec | undefined {
    return this.assetsByCode.get(code);
  }
  markets(): readonly MarketSpec[] {
    return this.marketList;
  }
  market(id: MarketId): MarketSpec | undefined {
    return this.marketsById.get(id);
  }
  marketByName(name: string): MarketSpec | undefined {
    return this.marketsByName.get(name);
  }

  private indexAsset(asset: AssetSpec): void {
    // First one wins, as a linear search would find it.
    if (!this.assetsByCode.has(asset.code)) this.assetsByCode.set(asset.code, asset);
  }

  private indexMarket(market: MarketSpec): void {
    this.marketsById.set(market.id, market);
    for (const name of [`${market.base}${market.quote}`, `${market.base}/${market.quote}`])
      if (!this.marketsByName.has(name)) this.marketsByName.set(name, market);
  }
}
