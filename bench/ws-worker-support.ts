/** What the WebSocket client workers (bench/ws-clients.ts, bench/ws-idle-clients.ts) share. */
import type { WebSocket } from 'ws';

/** Whether the frame `data` begins with `prefix` (frames are recognised without being parsed). */
export const startsWith = (data: Buffer, prefix: Buffer): boolean =>
  data.length >= prefix.length && data.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;

/**
 * Counts `socket`'s close code in `closed`; a close or an error before `isReady()` rejects the
 * connection attempt.
 */
export function watchEnd(
  socket: WebSocket,
  closed: Record<string, number>,
  isReady: () => boolean,
  reject: (error: Error) => void,
): void {
  socket.on('close', (code) => {
    closed[code] = (closed[code] ?? 0) + 1;
    if (!isReady()) reject(new Error(`closed with ${code} before being ready`));
  });
  socket.on('error', (error) => {
    if (!isReady()) reject(error);
  });
}

/** `count` sockets from `connect`, and how many attempts failed. */
export async function connectAll(
  count: number,
  connect: () => Promise<WebSocket>,
): Promise<{ sockets: WebSocket[]; failed: number }> {
  const sockets: WebSocket[] = [];
  let failed = 0;
  // In groups, so the server's accept queue is not flooded.
  for (let i = 0; i < count; i += 100) {
    const group = await Promise.allSettled(Array.from({ length: Math.min(100, count - i) }, () => connect()));
    for (const result of group) {
      if (result.status === 'fulfilled') sockets.push(result.value);
      else failed += 1;
    }
  }
  return { sockets, failed };
}
