// The service's logger: pino's JSON lines, or pino-pretty's readable ones (`npm run dev`).
import { type Logger, pino } from "pino";
import type { Config } from "./config.ts";

/**
 * JSON lines go out in 4 KiB writes, at least every 100 ms, and all of them at exit: not a system
 * call per request (sonic-boom's synchronous mode: its asynchronous one costs more per line). A
 * SIGKILL can lose the last 100 ms of lines.
 */
export function createLogger(
  { logLevel, logFormat }: Pick<Config, "logLevel" | "logFormat">,
  destination: number | string = 1,
): Logger {
  if (logFormat === "pretty") {
    return pino({ level: logLevel, transport: { target: "pino-pretty" } });
  }
  const lines = pino.destination({
    dest: destination,
    sync: true,
    minLength: 4096,
    periodicFlush: 100,
  });
  process.once("exit", () => lines.flushSync());
  return pino({ level: logLevel }, lines);
}
