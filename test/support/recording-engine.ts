// An engine wrapper for tests: every request that reaches the engine, kept in order.
import type { QueryEngine, QueryRequest } from "../../src/engines/engine.ts";

/** Wraps an engine so that each request it runs is pushed onto `runs` first. */
export function recordingInto(runs: QueryRequest[]) {
  return (engine: QueryEngine): QueryEngine => ({
    ...engine,
    run: (request) => {
      runs.push(request);
      return engine.run(request);
    },
  });
}
