// The service (embedded engine, or BigQuery stand-in) with its result cache on a clock the test
// moves, and its engine queries counted.
import type { FastifyBaseLogger } from "fastify";
import type { QueryEngine } from "../../src/engines/engine.ts";
import type { Row } from "./googlesql.ts";
import {
  type BigQueryService,
  type Service,
  type ServiceOptions,
  startBigQueryService,
  startService,
} from "./service.ts";

/** Wraps the engine to count the queries that reach it and those that have settled. */
export function countingEngine() {
  const counts = { runs: 0, settled: 0 };
  const wrap = (engine: QueryEngine): QueryEngine => ({
    dialect: engine.dialect,
    run: async (request) => {
      counts.runs++;
      try {
        return await engine.run(request);
      } finally {
        counts.settled++;
      }
    },
    // A page of a kept result is no query: not counted.
    ...(engine.readPage && { readPage: engine.readPage.bind(engine) }),
    ping: () => engine.ping(),
    close: () => engine.close(),
  });
  return { counts, wrap };
}

/** A service on fixture tables whose cache clock is `clock.ms`, with its engine queries counted. */
export function cachedService(
  now: string,
  tables: Record<string, Row[]>,
  logger?: FastifyBaseLogger,
  deps: Partial<ServiceOptions> = {},
) {
  return cached(startService, now, tables, logger, deps);
}

/** cachedService on the BigQuery stand-in. */
export function cachedBigQueryService(
  now: string,
  tables: Record<string, Row[]>,
  logger?: FastifyBaseLogger,
  deps: Partial<ServiceOptions> = {},
) {
  return cached<BigQueryService>(startBigQueryService, now, tables, logger, deps);
}

async function cached<S extends Service>(
  start: (options: ServiceOptions) => Promise<S>,
  now: string,
  tables: Record<string, Row[]>,
  logger: FastifyBaseLogger | undefined,
  deps: Partial<ServiceOptions>,
): Promise<{
  service: S;
  engine: ReturnType<typeof countingEngine>["counts"];
  clock: { ms: number };
}> {
  const clock = { ms: 0 };
  const engine = countingEngine();
  const { config, ...rest } = deps;
  const service = await start({
    now,
    tables,
    config: { cache: { maxEntries: 100, maxBytes: 1_000_000 }, ...config },
    cache: { now: () => clock.ms },
    wrapEngine: engine.wrap,
    logger,
    ...rest,
  });
  return { service, engine: engine.counts, clock };
}
