// Counts the queries an engine runs, by endpoint and trigger, for /metrics
// (query_service_engine_queries_total): with several replicas, their sum is what the cache saved or not.
import type { QueryEngine, QueryRequest } from "./engine.ts";

export interface QueryCount {
  endpoint: string;
  trigger: NonNullable<QueryRequest["trigger"]>;
  count: number;
}

export interface CountedEngine extends QueryEngine {
  /** Queries started since start, one row per endpoint and trigger seen. */
  queryCounts(): Iterable<QueryCount>;
}

export function countQueries(engine: QueryEngine): CountedEngine {
  const counts = new Map<string, QueryCount>();
  return {
    dialect: engine.dialect,
    run(request) {
      const trigger = request.trigger ?? "request";
      const key = `${trigger} ${request.endpoint}`;
      const seen = counts.get(key);
      if (seen) seen.count++;
      else counts.set(key, { endpoint: request.endpoint, trigger, count: 1 });
      return engine.run(request);
    },
    ping: () => engine.ping(),
    close: () => engine.close(),
    queryCounts: () => counts.values(),
  };
}
