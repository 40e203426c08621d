// Issue 15 item 3, patterns priced before they run: a `project` pattern the validator accepts costs
// usage.api-counts (daily, real DuckDB, demo data) at most 5× the literal `default`, medians of
// runs interleaved with the literal's after a warm-up; one it refuses is refused as too costly.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADVERSARIAL,
  demoEngine,
  familyEdges,
  LITERALS,
  medianMs,
  USEFUL,
} from "../../bench/pattern-cost.ts";
import { re2PatternProblem } from "../../src/endpoints/re2-pattern.ts";

const MAX_RATIO = 5;
const RUNS = 5;

let demo: Awaited<ReturnType<typeof demoEngine>>;
beforeAll(async () => {
  demo = await demoEngine();
});
afterAll(async () => {
  await demo.engine.close();
});

const corpus = [...ADVERSARIAL, ...familyEdges()];

describe("usage.api-counts project patterns", () => {
  it.each(corpus)("%s is refused as too costly, or costs at most 5× a literal", async (pattern) => {
    const problem = re2PatternProblem(pattern);
    if (problem !== undefined) {
      expect(problem).toMatch(/^too costly to run: .* use a narrower class .* or a smaller count$/);
      return;
    }
    const ms = await medianMs(demo.timeMs, pattern, LITERALS[0], RUNS);
    expect(
      ms.pattern / ms.literal,
      `${ms.pattern} ms against ${ms.literal} ms`,
    ).toBeLessThanOrEqual(MAX_RATIO);
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
