#!/usr/bin/env node
// Prints the X-API-Sign header value for a request, for curl users:
//
//   BODY='{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.01","price":"30000"}'
//   curl -X POST "$OPENSPOT_URL/v1/orders" -H 'Content-Type: application/json' \
//     -H "X-API-Key: $OPENSPOT_API_KEY" -H "X-API-Sign: $(node scripts/sign.mjs POST "$BODY")" -d "$BODY"
//   curl "$OPENSPOT_URL/v1/spot-wallet" -H "X-API-Key: $OPENSPOT_API_KEY" \
//     -H "X-API-Sign: $(node scripts/sign.mjs GET)"
//
// Rule: base64(HMAC-SHA512(base64decode(secret), METHOD + hex(SHA-256(body)))), with an empty
// body signed as "{}". Send exactly the body you signed (same bytes, same key order, no spaces).
import { createHash, createHmac } from 'node:crypto';

const [method, body = ''] = process.argv.slice(2);
const secret = process.env.OPENSPOT_API_SECRET;
if (method === undefined || secret === undefined || secret === '') {
  process.stderr.write("usage: OPENSPOT_API_SECRET=... node scripts/sign.mjs METHOD ['BODY']\n");
  process.exit(2);
}
const digest = createHash('sha256')
  .update(body === '' ? '{}' : body, 'utf8')
  .digest('hex');
const signature = createHmac('sha512', Buffer.from(secret, 'base64'))
  .update(method.toUpperCase() + digest, 'utf8')
  .digest('base64');
process.stdout.write(`${signature}\n`);
