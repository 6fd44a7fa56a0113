/**
 * The faults in force, per scope (everyone, or one API key), and the decisions made from them.
 *
 * A request or connection of a key gets, for each kind of fault, the key's own fault when it has
 * one, and otherwise everyone's. The hot paths ask only `flags.http` / `flags.ws`, plain booleans
 * kept up to date on every change, so with no fault set they pay one property read.
 *
 * The random source is injected (tests pass a scripted one); nothing here reads a clock.
 */
import {
  FAULT_KINDS,
  type FaultKind,
  type FaultSet,
  HTTP_KINDS,
  type InjectedFault,
  isEmpty,
} from './faults.js';

export interface ChaosFlags {
  /** Some REST fault is set for someone. */
  http: boolean;
  /** Some WebSocket fault is set for someone. */
  ws: boolean;
  /** Some disconnect fault is set (the WebSocket hook then runs its sweep). */
  disconnects: boolean;
}

/** One injected fault, for the metrics and the log. `apiKey` is the public key id, never a secret. */
export interface InjectedEvent {
  readonly fault: InjectedFault;
  readonly apiKey: string | undefined;
  readonly detail?: Readonly<Record<string, unknown>>;
}

export interface ChaosOptions {
  /** Uniform in [0, 1). Default Math.random. */
  readonly random?: () => number;
  /** Told of every injected fault. */
  readonly onInjected?: (event: InjectedEvent) => void;
}

/** A fault picked for a request, with the scope it came from (to spend its count there). */
export interface Picked<K extends FaultKind> {
  readonly fault: NonNullable<FaultSet[K]>;
  readonly kind: K;
  readonly scope: string | undefined;
}

export interface ChaosState {
  readonly everyone: FaultSet;
  readonly keys: Readonly<Record<string, FaultSet>>;
}

export class Chaos {
  readonly flags: ChaosFlags = { http: false, ws: false, disconnects: false };
  readonly random: () => number;
  #everyone: FaultSet = {};
  readonly #keys = new Map<string, FaultSet>();
  readonly #onInjected: ((event: InjectedEvent) => void) | undefined;
  readonly #listeners = new Set<() => void>();

  constructor(options: ChaosOptions = {}) {
    this.random = options.random ?? Math.random;
    this.#onInjected = options.onInjected;
  }

  state(): ChaosState {
    return { everyone: this.#everyone, keys: Object.fromEntries(this.#keys) };
  }

  /** Replaces the fault set of a scope (`undefined`: everyone). An empty set clears it. */
  replace(apiKey: string | undefined, set: FaultSet): void {
    this.#write(apiKey, set);
  }

  /** Sets the given kinds in a scope and removes `removed`, keeping its other faults. */
  merge(apiKey: string | undefined, set: FaultSet, removed: readonly FaultKind[] = []): void {
    const current: Record<string, unknown> = { ...this.#read(apiKey), ...set };
    for (const kind of removed) delete current[kind];
    this.#write(apiKey, current as FaultSet);
  }

  /** Clears one key's faults, or every fault of every scope. */
  clear(apiKey?: string): void {
    if (apiKey !== undefined) this.#write(apiKey, {});
    else {
      this.#everyone = {};
      this.#keys.clear();
      this.#changed();
    }
  }

  /** Called after every change (the WebSocket hook starts or stops its sweep). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The fault of a kind for a caller holding these keys: the first key's own, else everyone's. */
  pick<K extends FaultKind>(kind: K, apiKeys: string | readonly string[] | undefined): Picked<K> | undefined {
    if (apiKeys !== undefined && this.#keys.size > 0) {
      for (const key of typeof apiKeys === 'string' ? [apiKeys] : apiKeys) {
        const fault = this.#keys.get(key)?.[kind];
        if (fault !== undefined) return { fault: fault as NonNullable<FaultSet[K]>, kind, scope: key };
      }
    }
    const fault = this.#everyone[kind];
    return fault === undefined
      ? undefined
      : { fault: fault as NonNullable<FaultSet[K]>, kind, scope: undefined };
  }

  /** True with probability `rate` (1 always, 0 never). */
  chance(rate: number): boolean {
    return rate >= 1 || (rate > 0 && this.random() < rate);
  }

  /**
   * Records one injection: spends one use of a counted fault (removing it when used up), and
   * tells the listener, naming the key of the caller it hit.
   */
  injected(
    picked: Picked<FaultKind>,
    fault: InjectedFault,
    apiKey: string | undefined,
    detail?: Record<string, unknown>,
  ): void {
    const { count } = picked.fault;
    if (count !== undefined) {
      const set: Record<string, unknown> = { ...this.#read(picked.scope) };
      // Only if the fault is still the one picked (a change may have replaced it meanwhile).
      if (set[picked.kind] === picked.fault) {
        if (count <= 1) delete set[picked.kind];
        else set[picked.kind] = { ...picked.fault, count: count - 1 };
        this.#write(picked.scope, set as FaultSet);
      }
    }
    this.#onInjected?.({ fault, apiKey, ...(detail === undefined ? {} : { detail }) });
  }

  #read(apiKey: string | undefined): FaultSet {
    return apiKey === undefined ? this.#everyone : (this.#keys.get(apiKey) ?? {});
  }

  #write(apiKey: string | undefined, set: FaultSet): void {
    if (apiKey === undefined) this.#everyone = set;
    else if (isEmpty(set)) this.#keys.delete(apiKey);
    else this.#keys.set(apiKey, set);
    this.#changed();
  }

  #changed(): void {
    const sets = [this.#everyone, ...this.#keys.values()];
    const any = (kinds: readonly FaultKind[]) => sets.some((s) => kinds.some((k) => s[k] !== undefined));
    this.flags.http = any(HTTP_KINDS);
    this.flags.ws = any(FAULT_KINDS.filter((k) => !HTTP_KINDS.includes(k)));
    this.flags.disconnects = any(['disconnects']);
    for (const listener of this.#listeners) listener();
  }
}
