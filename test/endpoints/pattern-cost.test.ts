// Issue 15 item 3, patterns priced before they run: the validator prices a `project` pattern by the
// work RE2 does per value matched, the instructions it compiles to, and refuses one past the cap
// (bench/pattern-cost.ts times each against a literal: the cap's basis). A pattern it accepts runs
// on the embedded engine (real DuckDB, demo data) to an answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADVERSARIAL, familyEdges, USEFUL } from "../../bench/pattern-cost.ts";
import { re2PatternProblem, re2PatternSteps } from "../../src/endpoints/re2-pattern.ts";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { endpointRequest } from "../support/catalog.ts";

/** re2-pattern.ts's cap: the instructions a pattern may compile to. */
const MAX_STEPS = 6000;

let engine: DuckDbEngine;
beforeAll(async () => {
  engine = await createDuckDbEngine();
  await loadData(engine, { demoData: true });
});
afterAll(async () => {
  await engine.close();
});

const corpus = [...ADVERSARIAL, ...familyEdges()];

describe("usage.api-counts project patterns", () => {
  it.each(corpus)("%s is refused as too costly, or runs within the cap", async (pattern) => {
    const problem = re2PatternProblem(pattern);
    if (problem !== undefined) {
      expect(problem).toMatch(/^too costly to run: .* use a narrower class .* or a smaller count$/);
      expect(re2PatternSteps(pattern)).toBeGreaterThan(MAX_STEPS);
      return;
    }
    expect(re2PatternSteps(pattern)).toBeLessThanOrEqual(MAX_STEPS);
    const answer = await engine.run(
      endpointRequest("usage.api-counts", "duckdb", { project: pattern, interval: "daily" }),
    );
    expect(Array.isArray(answer.rows)).toBe(true);
  });

  it.each(["\\pL{146}", "(?i)\\pL{145}", "[\\p{L}\\p{N}]{100}"])(
    "refuses %s, which took 2.3–2.7 s before the cap, saying why and what to write instead",
    (pattern) => {
      expect(re2PatternProblem(pattern)).toBe(
        "too costly to run: it compiles to more than 6000 steps, and every value in the window (a request URL, a log message) is matched against it (a Unicode class such as \\pL is 1600 steps, and \\pL{20} twenty times that); use a narrower class such as [a-z0-9] or a smaller count",
      );
    },
  );

  it.each(USEFUL)("accepts %s, a pattern a person would write", (pattern) => {
    expect(re2PatternProblem(pattern)).toBeUndefined();
  });
});
