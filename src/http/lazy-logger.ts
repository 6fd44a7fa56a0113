/**
 * `request.log` made only when a request logs something. Fastify builds a pino child (with the
 * request id) for every request; with request logging off (the default) almost no request ever
 * writes to it, and building it is a measurable share of a small request's cost.
 */
import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
type LogCall = (this: unknown, ...args: unknown[]) => void;
type MakeChild = (this: FastifyBaseLogger, bindings: Bindings, options?: ChildOptions) => FastifyBaseLogger;

export class LazyChildLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
    /** How the real child is made: the parent's own `child`, unless lazyChildren replaced it. */
    private readonly makeChild: MakeChild = parent.child,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.#logger().level = level;
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}

  #logger(): FastifyBaseLogger {
    this.#child ??= this.makeChild.call(this.parent, this.bindings, this.options);
    return this.#child;
  }

  #write(level: Level, args: unknown[]): void {
    const logger = this.#logger();
    (logger[level] as LogCall).apply(logger, args);
  }
}

/** Fastify's `childLoggerFactory` option. */
export function lazyChildLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}

/**
 * Makes every child of `logger` lazy, through its own `child` method: for Fastify's logger
 * (`app.log`), whose children are the requests' loggers. Fastify then builds them with its default
 * child logger factory; given `childLoggerFactory: lazyChildLogger` instead, it checked the
 * factory's result on every request (seven methods looked up, through a filter and a closure).
 * A pino child inherits its parent's properties, this `child` included, so the children of a
 * built child are lazy too, made from that child with its bindings.
 */
export function lazyChildren(logger: FastifyBaseLogger): void {
  const makeChild: MakeChild = logger.child;
  const child = function lazyChild(this: FastifyBaseLogger, bindings: Bindings, options?: ChildOptions) {
    return new LazyChildLogger(this, bindings, options, makeChild) as unknown as FastifyBaseLogger;
  };
  Object.defineProperty(logger, 'child', { value: child, writable: true, configurable: true });
}
