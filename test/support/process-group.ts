/**
 * Processes started as a terminal starts them: in a process group of their own, which a signal
 * to the group reaches whole (Ctrl-C), and which the test can find and clean up afterwards.
 * Linux only: the process table is read from /proc.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export const PROC_SKIP =
  process.platform !== 'linux' ? 'reads the process table from /proc (Linux only)' : false;

export interface ProcessStat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
}

/** Every live process on the machine: pid, parent and process group (fields 4 and 5 of /proc/pid/stat). */
export function processes(): ProcessStat[] {
  const list: ProcessStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name (field 2) may hold spaces and parentheses: split after its closing one.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue; // a zombie is already dead, only not yet reaped
      list.push({ pid: Number(name), ppid: Number(fields[1]), pgid: Number(fields[2]) });
    } catch {
      // exited while we were reading
    }
  }
  return list;
}

/** The live processes of group `pgid`. */
export const groupMembers = (pgid: number): number[] =>
  processes()
    .filter((p) => p.pgid === pgid)
    .map((p) => p.pid);

export interface GroupProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** SIGKILL to the whole group: a test's cleanup, whatever state it left. */
  kill(): void;
}

/**
 * `command args` as the leader of a new process group (stdin, stdout and stderr are pipes),
 * resolved once its output matches `ready`; rejected when it exits first or after `timeoutMs`.
 */
export async function startInGroup(
  command: string,
  args: readonly string[],
  options: {
    readonly cwd: string;
    readonly env: NodeJS.ProcessEnv;
    readonly ready: RegExp;
    readonly timeoutMs?: number;
  },
): Promise<GroupProcess> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: 'pipe', detached: true });
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const kill = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  const started: GroupProcess = { child, exited, output: () => log, kill };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let gone = false;
  void exited.then(() => (gone = true));
  while (!options.ready.test(log)) {
    if (gone || Date.now() > deadline) {
      kill();
      throw new Error(`${command} ${args.join(' ')} did not start:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return started;
}

/**
 * What a terminal's Ctrl-C does: SIGINT to every process of the group. Sent twice, a moment
 * apart, as a wrapper (npm, npx) forwards its own copy to its child, or as an impatient user
 * presses Ctrl-C again: the second must not cut the first one's clean shutdown short.
 */
export async function interruptGroup(pgid: number): Promise<void> {
  process.kill(-pgid, 'SIGINT');
  await new Promise((resolve) => setTimeout(resolve, 20));
  try {
    process.kill(-pgid, 'SIGINT');
  } catch {
    // everything already exited
  }
}

/** Resolves with `promise`, or rejects saying `what` after `ms`. */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
