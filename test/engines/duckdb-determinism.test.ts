// The same query over the same rows answers the same bytes every time, so a warming refresh of
// unchanged data keeps its ETag and pollers keep getting 304s. DuckDB aggregates in parallel: a float
// sum in whatever order the threads met its terms would differ in its last digits from run to run.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { endpointRequest } from "../support/catalog.ts";

const NOW = 1_763_900_000_000_000n;
const RUNS = 20;
let engine: DuckDbEngine;

beforeAll(async () => {
  engine = await createDuckDbEngine({ now: () => NOW });
  await loadData(engine, { demoData: true, now: NOW });
}, 60_000);
afterAll(() => engine?.close());

describe("DuckDB answers", () => {
  it.each(["1day", "7day", "1hr"])(
    "functions.invocation-stats %s: the same bytes in every run",
    async (interval) => {
      const params = { project: "default", interval, function_id: null };
      const answers = new Set<string>();
      for (let run = 0; run < RUNS; run++) {
        const request = endpointRequest("functions.invocation-stats", "duckdb", params);
        const result = await engine.run(request);
        answers.add(JSON.stringify(result.rows));
      }
      expect(answers.size).toBe(1);
    },
  );
});
