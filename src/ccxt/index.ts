/**
 * `openspot/ccxt`: OpenSpot as a ccxt exchange (docs/ccxt.md). ccxt is a peer dependency, loaded
 * only by whoever imports this module; the server never does.
 *
 *   import { OpenSpot } from 'openspot/ccxt'
 *   const exchange = new OpenSpot({ apiKey, secret, urls: { api: { rest: 'http://127.0.0.1:8080/v1' } } })
 */
import { OpenSpot } from './openspot.js';

export { BROAD_ERRORS, EXACT_ERRORS } from './errors.js';
export { OpenSpot } from './openspot.js';
export { OpenSpotRest, TIMEFRAMES } from './rest.js';
export default OpenSpot;
