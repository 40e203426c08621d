// The connection to the Redis (or Valkey) that replicas share, and whether it may be used now.
// Redis is a helper, never a single point of failure: a command that fails or takes longer than its
// timeout marks the link down, every caller then works locally at once (no command is sent while
// down), and a PING answered in time brings the link back: tried 100 ms after, then at doubling
// intervals up to every second, so a moment's lateness costs little sharing. Each transition is
// logged once.
// Timers come from node:timers, so tests that fake the global ones (for the cache's warming) do not
// fake these.
import { clearTimeout, setImmediate, setTimeout } from "node:timers";
import { Redis } from "ioredis";

/** What a command answers when Redis could not be used: the caller falls back to local work. */
export const UNAVAILABLE = Symbol("redis unavailable");
type Maybe<T> = T | typeof UNAVAILABLE;

export interface RedisLinkLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface RedisLinkOptions {
  /** `redis://` or `rediss://` (TLS), with the password in it if any. */
  url: string;
  /** Every key starts with it (REDIS_PREFIX). */
  prefix: string;
  /** Longest wait for a command on the hit path; default 50 ms. */
  timeoutMs?: number;
  logger?: RedisLinkLogger;
}

const FIRST_PROBE_MS = 100;
const PROBE_EVERY_MS = 1_000;

export class RedisLink {
  readonly client: Redis;
  readonly timeoutMs: number;
  readonly #logger: RedisLinkLogger | undefined;
  /** Undefined until the first answer or failure, so that the first state is logged too. */
  #up: boolean | undefined;
  #probing = false;
  #closed = false;
  #probe: NodeJS.Timeout | undefined;
  #probeDelayMs = FIRST_PROBE_MS;

  constructor(options: RedisLinkOptions) {
    this.timeoutMs = options.timeoutMs ?? 50;
    this.#logger = options.logger;
    this.client = new Redis(options.url, {
      keyPrefix: options.prefix,
      // While disconnected, commands fail at once instead of queueing: the caller works locally.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Reconnect soon after Redis is back, never more than a second apart.
      retryStrategy: (attempt) => Math.min(attempt * 100, PROBE_EVERY_MS),
      connectTimeout: 2_000,
      // Commands of one event-loop turn go out as one write: fewer system calls under load.
      enableAutoPipelining: true,
    });
    // ioredis reports connection errors as events; the link's state says what follows from them.
    this.client.on("error", () => this.#down("connection error"));
    this.client.on("close", () => this.#down("connection closed"));
    this.client.on("ready", () => void this.#check());
  }

  /** Whether the replicas share through Redis now. */
  get up(): boolean {
    return this.#up === true;
  }

  /**
   * Runs a command when the link is up and answers its result, or UNAVAILABLE when the link is down,
   * the command fails, or it takes longer than `timeoutMs` (the last two mark the link down).
   */
  async run<T>(
    command: (client: Redis) => Promise<T>,
    timeoutMs = this.timeoutMs,
  ): Promise<Maybe<T>> {
    if (this.#up !== true) return UNAVAILABLE;
    const late = deadline(timeoutMs);
    try {
      const answer = await Promise.race([command(this.client), late.passed]);
      if (answer === UNAVAILABLE) this.#down(`no answer within ${timeoutMs} ms`);
      return answer;
    } catch (error) {
      // Refusals too (LOADING after a restart, OOM past maxmemory, READONLY on a replica): a request
      // never fails because of Redis; the log line says why sharing stopped.
      this.#down((error as Error).message);
      return UNAVAILABLE;
    } finally {
      late.cancel();
    }
  }

  /** Resolves once the link is up (tests and benchmarks); false when it is not within `ms`. */
  async waitUntilUp(ms: number): Promise<boolean> {
    const until = performance.now() + ms;
    while (!this.up && performance.now() < until) {
      await this.#check();
      if (!this.up) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return this.up;
  }

  async close(): Promise<void> {
    clearTimeout(this.#probe);
    this.#closed = true;
    this.#up = false;
    this.client.disconnect();
  }

  async #check(): Promise<void> {
    if (this.#probing || this.client.status !== "ready") return;
    this.#probing = true;
    const late = deadline(this.timeoutMs);
    try {
      const answered = await Promise.race([
        this.client.ping().then(
          () => true,
          () => false,
        ),
        late.passed.then(() => false),
      ]);
      if (answered)
        this.#set(true, "Redis answers: sharing the cache and limits with the other replicas");
    } finally {
      late.cancel();
      this.#probing = false;
    }
  }

  #down(reason: string): void {
    if (this.#up === false) return;
    this.#set(false, "Redis unavailable: each replica now uses its own cache and limits", reason);
    this.#probeDelayMs = FIRST_PROBE_MS;
    this.#scheduleProbe();
  }

  /** PINGs until the link is up again, at doubling intervals up to PROBE_EVERY_MS. */
  #scheduleProbe(): void {
    if (this.#closed || this.#probe) return;
    this.#probe = setTimeout(async () => {
      this.#probe = undefined;
      await this.#check();
      if (this.up) return;
      this.#probeDelayMs = Math.min(this.#probeDelayMs * 2, PROBE_EVERY_MS);
      this.#scheduleProbe();
    }, this.#probeDelayMs);
    this.#probe.unref();
  }

  #set(up: boolean, message: string, reason?: string): void {
    if (this.#up === up || this.#closed) return;
    this.#up = up;
    if (up) this.#logger?.info({ redis: "up" }, message);
    else this.#logger?.warn({ redis: "down", reason }, message);
  }
}

/**
 * Passes `ms` from now, measured as time this process could have heard Redis's answer. The decision
 * waits for the I/O phase after the timer: after a stall of this process's own event loop the timer
 * and the reply are both due and the timer runs first. And when the timer itself fired more than
 * `ms` late, the command may have been written only just now (auto-pipelining writes on a later
 * turn): it gets one more `ms`. A busy replica is not a slow Redis.
 */
function deadline(ms: number): { passed: Promise<typeof UNAVAILABLE>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  const passed = new Promise<typeof UNAVAILABLE>((resolve) => {
    const arm = (again: boolean) => {
      const due = performance.now() + ms;
      timer = setTimeout(() => {
        setImmediate(() => {
          if (cancelled) return;
          if (again && performance.now() - due > ms) arm(false);
          else resolve(UNAVAILABLE);
        });
      }, ms);
    };
    arm(true);
  });
  return {
    passed,
    cancel: () => {
      cancelled = true;
      clearTimeout(timer);
    },
  };
}
