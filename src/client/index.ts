/**
 * `openspot/client`: a typed client for the OpenSpot interface (HTTP), the request signature, the
 * channel message types and a local order book helper. The realtime helper lives in
 * `openspot/client/realtime` because it needs the optional `pusher-js` dependency.
 */
export * from './channels.js';
export { bookChecksum, crc32 } from './checksum.js';
export {
  type AmendParams,
  type ClientOptions,
  type CreateOrderParams,
  OpenSpotClient,
  type OrderParams,
  orderBody,
  type PageParams,
  timestampNonces,
} from './client.js';
export { compareDecimal, formatUnits, isZeroDecimal, parseUnits, subtractDecimal } from './decimal.js';
export * from './errors.js';
export { type BookApplyResult, LocalBook, type LocalBookOptions } from './local-book.js';
export { bodyDigest, EMPTY_BODY, signRequest } from './sign.js';
export * from './types.js';
