// Demo data that stays live: every few seconds the rows of the time since the last tick arrive
// (the demo mix, at the demo rate), and rows older than the demo's days are dropped, so the short
// windows are never empty after a long uptime and charts move. Derived tables follow.
import type { FastifyBaseLogger } from "fastify";
import { dateToMicros } from "../../time.ts";
import type { DuckDbEngine } from "../duckdb.ts";
import { DEMO_SIZE, generateLogs } from "./demo-data.ts";
import { dropRecordsBefore } from "./derived.ts";
import { repeat } from "./repeat.ts";
import { inTransaction } from "./transaction.ts";

const DAY_US = 86_400_000_000;

export interface DemoFeedOptions {
  intervalMs: number;
  /** The demo data's anchor: rows up to it exist already. */
  since: bigint;
  /** Epoch microseconds; default: the system clock. */
  now?: () => bigint;
  log: Pick<FastifyBaseLogger, "error">;
}

export interface DemoFeed {
  /** Adds the rows since the last tick and drops expired ones, now (tests), after the tick under way. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

export function feedDemoData(engine: DuckDbEngine, options: DemoFeedOptions): DemoFeed {
  const now = options.now ?? (() => dateToMicros(new Date()));
  let last = options.since;

  async function tickOnce(): Promise<void> {
    const newest = now();
    const days = Number(newest - last) / DAY_US;
    if (days <= 0) return;
    // Whole rows at the demo rate; the fraction arrives with its probability.
    const rows = (perWindow: number) =>
      Math.floor((perWindow / DEMO_SIZE.days) * days + Math.random());
    const connection = await engine.connect();
    try {
      await generateLogs(connection, {
        now: newest,
        days,
        edgeLogs: rows(DEMO_SIZE.edgeLogs),
        functionEdgeLogs: rows(DEMO_SIZE.functionEdgeLogs),
      });
      last = newest;
      await inTransaction(connection, () =>
        dropRecordsBefore(connection, newest - BigInt(DEMO_SIZE.days * DAY_US)),
      );
    } finally {
      connection.closeSync();
    }
  }

  const repeated = repeat(options.intervalMs, tickOnce, (error) =>
    options.log.error({ err: error }, "demo data: a tick failed"),
  );
  return { tick: repeated.run, stop: repeated.stop };
}
