// Fastify makes a child logger for every request (pino's child() took about 0.16 µs). A request
// that goes well writes only its request line (request-log.ts), which needs none, so the child is
// made the first time something logs through it.
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "pino";

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
type LogMethod = (...args: unknown[]) => void;

/** Fastify's childLoggerFactory: the request's child, made on first use. */
export function deferredChild(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new DeferredChild(parent, bindings, options);
}

class DeferredChild {
  declare fatal: FastifyBaseLogger["fatal"];
  declare error: FastifyBaseLogger["error"];
  declare warn: FastifyBaseLogger["warn"];
  declare info: FastifyBaseLogger["info"];
  declare debug: FastifyBaseLogger["debug"];
  declare trace: FastifyBaseLogger["trace"];
  declare silent: FastifyBaseLogger["silent"];
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #made: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  made(): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings, this.#options);
    return this.#made;
  }

  get level(): string {
    return this.#made?.level ?? this.#options.level ?? this.#parent.level;
  }
  set level(level: string) {
    this.made().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.made().child(bindings, options);
  }
}

for (const level of LEVELS) {
  DeferredChild.prototype[level] = function (this: DeferredChild, ...args: unknown[]) {
    (this.made()[level] as LogMethod)(...args);
  };
}
