// Arbitrary query strings against every endpoint, through the whole service: never a 5xx, and the
// engine only ever sees parameters that passed validation, exactly as validation left them.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { catalog } from "../../src/endpoints/catalog.ts";
import { parseParams } from "../../src/endpoints/params.ts";
import type { QueryEngine, QueryRequest } from "../../src/engines/engine.ts";
import { startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";

const plausible = fc.constantFrom(
  "default",
  "1hr",
  "5min",
  "7day",
  "hourly",
  "daily",
  "minutely",
  "FREE",
  "PRO",
  "ENTERPRISE",
  "2026-11-21T05:00:00Z",
  "2026-11-21T07:00:00.123456789+02:00",
  "2026-02-30T00:00:00Z",
  "^https://default\\.",
  "(",
  "(?=x)",
  "\\",
  "' OR 1=1 --",
  "%",
  "",
);
const value = fc.oneof(
  plausible,
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ maxLength: 2000 }),
);
const values = fc.oneof(
  { weight: 5, arbitrary: value.map((v) => [v]) },
  fc.array(value, { minLength: 2, maxLength: 3 }),
);

/** A valid query string, some of its parameters dropped, then arbitrary pairs appended. */
function queryStrings(example: Record<string, string>) {
  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...Object.keys(example)) },
    fc.constantFrom("projct", "api_key", "sql", "__proto__", "constructor", "toString"),
    fc.string({ minLength: 1, maxLength: 12 }),
  );
  const kept = fc.subarray(Object.entries(example).map(([name, v]) => [name, [v]] as const));
  return fc.tuple(kept, fc.array(fc.tuple(key, values), { maxLength: 4 })).map(([base, extra]) => {
    const search = new URLSearchParams();
    for (const [name, given] of [...base, ...extra]) for (const v of given) search.append(name, v);
    return search.toString();
  });
}

describe.each(catalog.map((endpoint) => [endpoint.name, endpoint] as const))(
  "%s",
  (name, endpoint) => {
    it("never answers 5xx, and validates before the engine sees anything", async () => {
      const calls: QueryRequest[] = [];
      const counting = (engine: QueryEngine): QueryEngine => ({
        ...engine,
        run: (request) => {
          calls.push(request);
          return engine.run(request);
        },
      });
      const { app, get } = await startService({
        now: NOW,
        wrapEngine: counting,
        rateLimitPerMinute: 100_000,
      });
      const statuses: number[] = [];

      await fc.assert(
        fc.asyncProperty(queryStrings(validExample(name)), async (search) => {
          const before = calls.length;
          const response = await get(`/api/endpoints/${name}?${search}`);
          statuses.push(response.statusCode);
          expect(response.statusCode, response.body).toBeLessThan(500);
          if (response.statusCode === 400) {
            expect(JSON.parse(response.body).error.code).toBe("invalid_params");
            expect(calls.length).toBe(before);
            return;
          }
          expect(response.statusCode).toBe(200);
          const parsed = parseParams(
            endpoint.params,
            Object.fromEntries(new URLSearchParams(search)),
          );
          for (const call of calls.slice(before)) expect(call.params).toEqual(parsed);
        }),
        { numRuns: 60 },
      );
      // Both outcomes were exercised, so neither branch above held vacuously.
      expect(statuses).toContain(200);
      expect(statuses).toContain(400);
      await app.close();
    });
  },
);

function validExample(name: string): Record<string, string> {
  const examples: Record<string, Record<string, string>> = {
    "functions.invocation-stats": { project: "default", interval: "1hr" },
    "logs.all": { project: "default", project_tier: "FREE" },
    "usage.api-counts": { project: "default", interval: "hourly" },
  };
  return examples[name] as Record<string, string>;
}
