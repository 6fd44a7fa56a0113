/**
 * A throw-away process (`openspot test-venue`) must not outlive what started it. A test fixture
 * in another language starts it through `npx`, and stopping `npx` does not stop its child: the
 * venue went on listening, reparented to PID 1. So the venue also ends when:
 * - its standard input is a pipe and the pipe closes: the starter closed it, or died (the kernel
 *   closes a dead process's end), whatever sat in between (npx, a shell);
 * - its parent process changes: the one that started it died.
 * A terminal or /dev/null as stdin is not watched: it never "closes" (a terminal) or is closed
 * from the start (`< /dev/null`, a supervisor's default).
 */
import { fstatSync } from 'node:fs';

const PARENT_CHECK_MS = 500;

export function onAbandoned(stop: (why: 'stdin closed' | 'parent exited') => void): void {
  if (stdinIsPipe()) {
    process.stdin.on('end', () => stop('stdin closed'));
    process.stdin.on('error', () => stop('stdin closed'));
    // Whatever the starter writes is read and dropped: only the end of the pipe matters.
    process.stdin.resume();
  }
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop('parent exited');
  }, PARENT_CHECK_MS);
  timer.unref();
}

function stdinIsPipe(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false; // no stdin at all
  }
}
