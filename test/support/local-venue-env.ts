/**
 * The environment of a server that every client reaches from 127.0.0.1 and that sends far more
 * than any one real client would (test suites, benches): no simulator or demo activity, and the
 * per-address and per-key limits (HTTP and WebSocket) off.
 */
export const LOCAL_VENUE_ENV: Readonly<Record<string, string>> = {
  SIMULATOR: 'off',
  DEMO: 'off',
  RATE_LIMIT_IP_PER_SECOND: '0',
  RATE_LIMIT_KEY_PER_SECOND: '0',
  WS_MAX_FRAMES_PER_SECOND: '0',
  WS_MAX_CONNECTIONS_PER_IP: '0',
  WS_UPGRADES_PER_SECOND_PER_IP: '0',
};
