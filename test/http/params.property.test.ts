// Arbitrary query strings against every endpoint of the catalog, through the whole service: never a
// 5xx, nothing reaches the engine unless the whole query string is valid, and what reaches it has
// the shape the SQL binds (checked against the endpoint's declared schema, not against the parser).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { EndpointDefinition } from "../../src/endpoints/catalog.ts";
import { RANGE_PARAMS, RANGE_SETTLED } from "../../src/endpoints/time-range.ts";
import type { QueryRequest } from "../../src/engines/engine.ts";
import { catalog } from "../support/catalog.ts";
import { edgeLog, functionCall, MINUTE, shift } from "../support/fixtures.ts";
import { recordingInto } from "../support/recording-engine.ts";
import { startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
// A record in every window, so that each query evaluates its parameters (a regex is compiled only
// when there is a row to match it against).
const TABLES = {
  edge_logs: [edgeLog(shift(NOW, -MINUTE / 2n))],
  function_edge_logs: [functionCall(shift(NOW, -MINUTE / 2n))],
};
const RFC3339_MICROS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const ordinary = [
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
];
/** Inputs at the edges of validation; each is also tried in every parameter of every endpoint. */
const edges = [
  // The ends of BigQuery's TIMESTAMP range, inside and just outside once the offset is applied.
  "0001-01-01T00:00:00Z",
  "9999-12-31T23:59:59.999999Z",
  "9999-12-31T23:00:00-02:00",
  "0001-01-01T00:30:00+01:00",
  // Regexes re2js parses that C++ RE2 (the engines') may not, and ones both run.
  "(?<n>default)",
  "(?P<n>default)",
  "\\pL{1000}",
  "\\pL{100}",
  "((a{100}b){10}){1}",
  "\\C",
  "(?i)DEFAULT",
  "\\Qdefault.\\E",
  "a++",
  "a+?",
  "\\p{Greek}",
  "\\b\\z",
  Array.from({ length: 40 }, (_, i) => `ref${i}`).join("|"),
  "x".repeat(257),
  "x".repeat(1025),
  "\u0000",
  "%00",
  "a+b",
  "a b",
];
const plausible = fc.constantFrom(...ordinary, ...edges);
const value = fc.oneof(
  plausible,
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ maxLength: 2000 }),
);
const values = fc.oneof(
  { weight: 5, arbitrary: value.map((v) => [v]) },
  fc.array(value, { minLength: 2, maxLength: 3 }),
);

/** The endpoint's parameters as its schema declares them (the form the catalog listing uses). */
function declared(endpoint: EndpointDefinition) {
  const schema = z.toJSONSchema(endpoint.params, { io: "input", unrepresentable: "any" }) as {
    properties: Record<string, { format?: string }>;
    required?: string[];
  };
  const names = Object.keys(schema.properties);
  // A paged endpoint's SQL binds its cursor as the position it names, and `since` as the
  // iso_timestamp_start it resolves to. A time range binds its aligned bounds and bucket in place
  // of max_points, and without `from` none of its parameters.
  const position = ["cursor_timestamp", "cursor_id"];
  const unbound = ["cursor", "since"];
  const spanBound = names.filter((name) => !(RANGE_PARAMS as readonly string[]).includes(name));
  return {
    names,
    bound: (search: string) =>
      endpoint.paging
        ? [...names.filter((name) => !unbound.includes(name)), ...position]
        : !endpoint.range
          ? names
          : new URLSearchParams(search).get("from")
            ? names.filter((name) => name !== "max_points")
            : spanBound,
    required: schema.required ?? [],
    timestamps: [
      ...names.filter((name) => schema.properties[name]?.format === "date-time"),
      "cursor_timestamp",
      ...(endpoint.range ? ["from", "to"] : []),
    ],
  };
}

/** The endpoint's example with parameters dropped or given other values, then pairs appended. */
function queryStrings(endpoint: EndpointDefinition) {
  const names = declared(endpoint).names;
  const base = fc.tuple(
    ...Object.entries(endpoint.example).map(([name, example]) =>
      fc
        .oneof(
          { weight: 6, arbitrary: fc.constant([example]) },
          { weight: 2, arbitrary: values },
          { weight: 1, arbitrary: fc.constant([]) },
        )
        .map((given) => [name, given] as const),
    ),
  );
  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...names) },
    fc.constantFrom("projct", "api_key", "sql", "__proto__", "constructor", "toString"),
    fc.string({ minLength: 1, maxLength: 12 }),
  );
  const extra = fc.oneof(
    { weight: 3, arbitrary: fc.constant([]) },
    fc.array(fc.tuple(key, values), { minLength: 1, maxLength: 3 }),
  );
  // Encodings URLSearchParams never writes: a raw NUL, `+` for a space, a bare key, broken escapes.
  const verbatim = fc.oneof(
    { weight: 3, arbitrary: fc.constant("") },
    fc
      .tuple(fc.constantFrom(...names), fc.constantFrom("%00", "a+b", "%2B", "", "%E0%A4%A", "%FF"))
      .map(([name, encoded]) => (encoded === "" ? name : `${name}=${encoded}`)),
  );
  return fc.tuple(base, extra, verbatim).map(([given, appended, raw]) => {
    const search = new URLSearchParams();
    for (const [name, list] of [...given, ...appended])
      for (const v of list) search.append(name, v);
    return [search.toString(), raw].filter(Boolean).join("&");
  });
}

/**
 * Percent-encoded UTF-8 (RFC 3986 §2.1, WHATWG URL): every `%` starts two hex digits, and the bytes
 * the string spells decode as UTF-8. Written from the rule, not with decodeURIComponent.
 */
function isValidlyEncoded(search: string): boolean {
  if (/%(?![0-9A-Fa-f]{2})/.test(search)) return false;
  const bytes = search
    .split(/(%[0-9A-Fa-f]{2})/)
    .flatMap((part) =>
      part.startsWith("%") ? [Number.parseInt(part.slice(1), 16)] : [...Buffer.from(part, "utf8")],
    );
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
    return true;
  } catch {
    return false;
  }
}

/** The endpoint's example with one parameter, in turn, given each edge value. */
function edgeCases(endpoint: EndpointDefinition): [string][] {
  return declared(endpoint).names.flatMap((name) =>
    edges.map((edge): [string] => [
      new URLSearchParams({ ...endpoint.example, [name]: edge }).toString(),
    ]),
  );
}

describe.each(catalog.map((endpoint) => [endpoint.name, endpoint] as const))(
  "%s",
  (name, endpoint) => {
    it("never answers 5xx, and the engine sees only a whole valid parameter set", async () => {
      const { names, bound, required, timestamps } = declared(endpoint);
      const calls: QueryRequest[] = [];
      const { app, get } = await startService({
        now: NOW,
        tables: TABLES,
        wrapEngine: recordingInto(calls),
        config: { rateLimitPerMinute: 100_000 },
      });
      const statuses: number[] = [];

      await fc.assert(
        fc.asyncProperty(queryStrings(endpoint), async (search) => {
          const before = calls.length;
          const response = await get(`/api/endpoints/${name}?${search}`);
          statuses.push(response.statusCode);
          expect(response.statusCode, response.body).toBeLessThan(500);
          if (response.statusCode === 400) {
            // bad_request: a broken escape anywhere; invalid_params: a well-encoded bad value.
            expect(JSON.parse(response.body).error.code).toBe(
              isValidlyEncoded(search) ? "invalid_params" : "bad_request",
            );
            expect(calls.length).toBe(before);
            return;
          }
          expect(response.statusCode).toBe(200);
          // Accepted, so every key given was declared, and given once.
          const keys = [...new URLSearchParams(search).keys()];
          expect(new Set(keys).size).toBe(keys.length);
          for (const key of keys) expect(names).toContain(key);
          for (const { params } of calls.slice(before)) {
            // A settled range's mark keys its cache entry; the SQL never binds it.
            const { [RANGE_SETTLED]: _settled, ...sent } = params;
            expect(Object.keys(sent).sort()).toEqual([...bound(search)].sort());
            for (const param of bound(search)) {
              const value = params[param];
              expect(value === null || typeof value === "string", param).toBe(true);
              if (required.includes(param)) expect(value, param).toMatch(/./s);
              if (timestamps.includes(param) && value !== null) {
                expect(value, param).toMatch(RFC3339_MICROS_UTC);
              }
            }
          }
        }),
        { numRuns: 60, examples: edgeCases(endpoint) },
      );
      // Both outcomes were exercised and the engine was reached, so no check above held vacuously.
      expect(statuses).toContain(200);
      expect(statuses).toContain(400);
      expect(calls.length).toBeGreaterThan(0);
      await app.close();
    });
  },
);
