/**
 * The example systemd units (deploy/systemd/*.service) as the cluster tests start them
 * (test/support/cluster.ts `startClusterProcess`): a unit's `ExecStart=` and `Environment=` lines,
 * read and checked, so a unit the tests would start differently from systemd fails loudly.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The example units (docs/deployment.md, "systemd units"). */
export const SYSTEMD_DIR = join(ROOT, 'deploy', 'systemd');
/** Where the units expect the installed CLI (`npm install -g` with npm's prefix /usr). */
export const INSTALLED_BINARY = '/usr/bin/openspot';
/** The cluster commands of the CLI (src/cli/main.ts) and the options each takes. */
export const CLI_COMMANDS: Readonly<Record<string, readonly string[]>> = {
  engine: ['--standby'],
  gateway: [],
};

/** The unit that starts each command line the tests ask for. */
export const UNIT_FOR: Readonly<Record<string, string>> = {
  engine: 'openspot-engine.service',
  'engine --standby': 'openspot-engine-standby.service',
  gateway: 'openspot-gateway.service',
};

export interface UnitCommand {
  /** The arguments after the installed binary, e.g. `['engine', '--standby']`. */
  readonly args: readonly string[];
  /** The unit's `Environment=` assignments, in order (a later one wins). */
  readonly environment: Readonly<Record<string, string>>;
  /** The unit's `EnvironmentFile=` paths (the test passes their variables itself). */
  readonly environmentFiles: readonly string[];
}

/**
 * Splits a systemd command line or `Environment=` value into words: whitespace separates,
 * double or single quotes group, a backslash escapes the next character. `$`, `%` (variable
 * expansion, specifiers) are refused: the starter would not expand them as systemd does.
 */
export function unitWords(text: string, where: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '$' || c === '%')
      throw new Error(`${where}: '${c}' (expansion or specifier) is not supported by the test starter`);
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && i + 1 < text.length) word += text[++i]!;
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (c === '\\' && i + 1 < text.length) word = (word ?? '') + text[++i]!;
    else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + c;
  }
  if (quote !== undefined) throw new Error(`${where}: unterminated quote`);
  if (word !== undefined) words.push(word);
  return words;
}

/**
 * The command of a unit's `[Service]` section: exactly one `ExecStart=` that runs the installed
 * CLI with a cluster command it knows (CLI_COMMANDS). Anything else is an error, so a unit the
 * tests would start differently from systemd fails loudly instead.
 */
export function parseUnit(text: string, name: string): UnitCommand {
  // Continuation lines: a backslash at the end of a line joins the next one.
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  let section = '';
  const execStart: string[] = [];
  const environment: Record<string, string> = {};
  const environmentFiles: string[] = [];
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    const where = `${name}:${index + 1}`;
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header !== null) {
      section = header[1]!;
      continue;
    }
    if (section !== 'Service') continue;
    const equals = line.indexOf('=');
    if (equals < 0) throw new Error(`${where}: not a key=value line: ${line}`);
    const key = line.slice(0, equals).trim();
    const value = line.slice(equals + 1).trim();
    if (key === 'ExecStart') execStart.push(value);
    else if (key === 'Environment')
      for (const assignment of unitWords(value, where)) {
        const at = assignment.indexOf('=');
        if (at <= 0) throw new Error(`${where}: Environment= needs NAME=value, got ${assignment}`);
        environment[assignment.slice(0, at)] = assignment.slice(at + 1);
      }
    else if (key === 'EnvironmentFile') environmentFiles.push(value.replace(/^-/, ''));
  }
  if (execStart.length !== 1)
    throw new Error(`${name}: expected exactly one ExecStart=, found ${execStart.length}`);
  const [binary, ...args] = unitWords(execStart[0]!, `${name} ExecStart`);
  if (binary !== INSTALLED_BINARY)
    throw new Error(
      `${name}: ExecStart= runs ${binary ?? 'nothing'}, not the installed CLI ${INSTALLED_BINARY}`,
    );
  const [command, ...options] = args;
  const known = command === undefined ? undefined : CLI_COMMANDS[command];
  if (known === undefined)
    throw new Error(
      `${name}: ExecStart= runs \`openspot ${args.join(' ')}\`, not a cluster command the CLI knows ` +
        `(${Object.keys(CLI_COMMANDS).join(', ')})`,
    );
  for (const option of options)
    if (!known.includes(option))
      throw new Error(
        `${name}: \`openspot ${command}\` takes no option ${option} (known: ${known.join(', ') || 'none'})`,
      );
  return { args, environment, environmentFiles };
}

/** The unit for a command line (`['engine', '--standby']`), read and checked. */
export function unitCommand(args: readonly string[], unit?: string): UnitCommand & { readonly unit: string } {
  const file = unit ?? UNIT_FOR[args.join(' ')];
  if (file === undefined)
    throw new Error(
      `no unit in deploy/systemd starts \`openspot ${args.join(' ')}\` (known: ${Object.keys(UNIT_FOR).join('; ')})`,
    );
  const path = file.includes('/') ? file : join(SYSTEMD_DIR, file);
  const parsed = parseUnit(readFileSync(path, 'utf8'), file);
  if (parsed.args.join(' ') !== args.join(' '))
    throw new Error(
      `${file} runs \`openspot ${parsed.args.join(' ')}\`, the test asked for \`openspot ${args.join(' ')}\``,
    );
  return { ...parsed, unit: file };
}
