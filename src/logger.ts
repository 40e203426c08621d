// The service's logger: pino's JSON lines, or pino-pretty's readable ones (a terminal, `npm run dev`).
import { type Logger, pino } from "pino";
import type { Config } from "./config.ts";

/** sonic-boom in its buffer content mode, which its type declarations do not describe yet. */
interface ByteSink {
  write(bytes: Buffer): boolean;
  flushSync(): void;
}

const BATCH_BYTES = 64 * 1024;

/**
 * Lines encoded straight into a 64 KiB buffer and handed to sonic-boom (which retries busy and
 * partial writes) when it is full: one system call per couple of hundred request lines. sonic-boom's
 * own batching (minLength) cost more per line: on every write it counts the UTF-8 bytes of all it
 * holds, and it encodes that string twice per system call.
 */
class LineBatch {
  readonly #out: ByteSink;
  #bytes = Buffer.allocUnsafe(BATCH_BYTES);
  #used = 0;

  constructor(out: ByteSink) {
    this.#out = out;
  }

  write(line: string): void {
    // A UTF-8 character takes at most three bytes per UTF-16 unit.
    if (this.#used + line.length * 3 > BATCH_BYTES) {
      this.flush();
      if (line.length * 3 > BATCH_BYTES) {
        this.#out.write(Buffer.from(line));
        return;
      }
    }
    this.#used += this.#bytes.write(line, this.#used);
  }

  /** Hands what is buffered to sonic-boom, which writes it at once (pino's `logger.flush()` calls this). */
  flush(done?: () => void): void {
    if (this.#used > 0) this.#handOver();
    done?.();
  }

  #handOver(): void {
    // A fresh buffer each time: the sent one stays sonic-boom's until it is written.
    this.#out.write(this.#bytes.subarray(0, this.#used));
    this.#bytes = Buffer.allocUnsafe(BATCH_BYTES);
    this.#used = 0;
  }
}

/**
 * JSON lines go out in 64 KiB writes, at least every 100 ms, and all of them at exit: not a system
 * call per request. A SIGKILL can lose the last 100 ms of lines.
 */
export function createLogger(
  { logLevel, logFormat }: Pick<Config, "logLevel" | "logFormat">,
  destination: number | string = 1,
): Logger {
  if (logFormat === "pretty") {
    return pino({ level: logLevel, transport: { target: "pino-pretty" } });
  }
  const out = pino.destination({
    dest: destination,
    sync: true,
    contentMode: "buffer",
  }) as unknown as ByteSink;
  const lines = new LineBatch(out);
  setInterval(() => lines.flush(), 100).unref();
  process.once("exit", () => {
    lines.flush();
    out.flushSync();
  });
  return pino({ level: logLevel }, lines);
}
