/**
 * Builds of the server for the benches that compare versions (`bench:http -- --compare REF`,
 * `bench:stages -- --compare REF`): this working tree's, and a git ref's in a temporary worktree
 * under the system's temporary directory that shares this checkout's node_modules. Only the
 * server is compiled (tsc -p tsconfig.build.json into dist/, what `npm start` runs), not the web
 * pages. The bench harness (bench/http-target.ts) stays this checkout's and loads a build through
 * BENCH_SERVER_DIST, so both versions are driven, funded and measured by the same code.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const HERE = join(import.meta.dirname, '..');

const git = (...args: string[]) => execFileSync('git', args, { cwd: HERE, encoding: 'utf8' }).trim();

/** Compiles the server of the checkout at `root` into root/dist; returns its dist/src. */
export function buildServer(root: string): string {
  const manifest = createRequire(join(HERE, 'package.json')).resolve('typescript/package.json');
  execFileSync(process.execPath, [join(dirname(manifest), 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return join(root, 'dist', 'src');
}

export interface RefBuild {
  /** The short commit id. */
  readonly commit: string;
  /** The build's dist/src (for BENCH_SERVER_DIST). */
  readonly dist: string;
  /** Removes the worktree. */
  remove(): void;
}

/** Checks `ref` out in a temporary worktree (node_modules shared) and builds its server. */
export function buildRef(ref: string): RefBuild {
  const commit = git('rev-parse', '--short', `${ref}^{commit}`);
  const root = mkdtempSync(join(tmpdir(), 'openspot-ref-'));
  git('worktree', 'add', '--detach', root, commit);
  const remove = () => {
    try {
      git('worktree', 'remove', '--force', root);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
  try {
    symlinkSync(join(HERE, 'node_modules'), join(root, 'node_modules'));
    return { commit, dist: buildServer(root), remove };
  } catch (error) {
    remove();
    throw error;
  }
}
