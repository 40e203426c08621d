// Every engine query, observed once where all its callers meet (requests, cache refreshes, follow
// polls): counted, its bytes and seconds charged to its endpoint, trigger and credential, and traced.
// The credential reaches the engine in its bounded label form, so the BigQuery job label, the metric
// and the span all carry the same value.
import type { QueryEngine, QueryRequest, QueryResult } from "../engines/engine.ts";
import { credentialLabels } from "./attribution.ts";
import { inSpan } from "./tracing.ts";

type Trigger = NonNullable<QueryRequest["trigger"]>;

export interface EngineUsage {
  endpoint: string;
  trigger: Trigger;
  /** A caller's credential label (a follow poll's is its feed's payer); `none` for work nobody asked for (warming). */
  credential: string;
  queries: number;
  bytesProcessed: number;
  seconds: number;
}

export interface ObservedEngine extends QueryEngine {
  /** What the engine did since start, one row per endpoint, trigger and credential seen. */
  usage(): Iterable<EngineUsage>;
}

export function observeEngine(engine: QueryEngine): ObservedEngine {
  const usage = new Map<string, EngineUsage>();
  const usageOf = (endpoint: string, trigger: Trigger, credential: string) => {
    const key = `${endpoint} ${trigger} ${credential}`;
    let found = usage.get(key);
    if (!found) {
      found = { endpoint, trigger, credential, queries: 0, bytesProcessed: 0, seconds: 0 };
      usage.set(key, found);
    }
    return found;
  };

  async function run(request: QueryRequest): Promise<QueryResult> {
    const trigger = request.trigger ?? "request";
    const credential = request.credential && credentialLabels.of(request.credential);
    const charged = usageOf(request.endpoint, trigger, credential ?? "none");
    charged.queries++;
    const started = performance.now();
    try {
      const result = await inSpan(
        "engine query",
        {
          attributes: {
            "db.system": engine.dialect,
            "query_service.endpoint": request.endpoint,
            "query_service.trigger": trigger,
            ...(credential && { "query_service.credential": credential }),
          },
          // Work nobody waits for starts a trace of its own, not a child of a finished request's.
          root: trigger !== "request" && credential === undefined,
        },
        () => engine.run({ ...request, ...(credential && { credential }) }),
        (result) => ({
          "query_service.rows": result.rows.length,
          ...(result.jobId && { "db.bigquery.job_id": result.jobId }),
          ...(result.queryId && { "db.bigquery.query_id": result.queryId }),
          ...(result.bytesProcessed !== undefined && {
            "db.bigquery.bytes_processed": result.bytesProcessed,
          }),
        }),
      );
      charged.bytesProcessed += result.bytesProcessed ?? 0;
      return result;
    } finally {
      charged.seconds += (performance.now() - started) / 1000;
    }
  }

  const { readPage, inspect } = engine;
  return {
    dialect: engine.dialect,
    run,
    // A page of a kept result is no query and processes no bytes: nothing to count.
    ...(readPage && { readPage: readPage.bind(engine) }),
    // Checking SQL runs nothing and bills nothing: nothing to count.
    ...(inspect && { inspect: inspect.bind(engine) }),
    ping: () => engine.ping(),
    close: () => engine.close(),
    usage: () => usage.values(),
  };
}
