// The DuckDB SQL (endpoints/<name>/duckdb.sql) gives the same rows as the BigQuery SQL beside it
// (bigquery.sql) run on GoogleSQL's reference engine, for hand-made edge cases and random fixture
// sets, with "now" pinned to the same microsecond in both. Rules where the engines may legitimately differ:
// - avg_execution_time: float sums depend on the order of addition (BigQuery's own varies from
//   run to run), so it is compared to a relative 1e-12.
// - p95/p99: both are the value of rank floor(i·(n−1)/100) among the n sorted non-null values,
//   the rule of the reference engine's exact APPROX_QUANTILES: compared exactly.
// - logs.all and window/logs.all (a follow stream's catch-up, oldest first without a LIMIT): records
//   with equal timestamps may come in either order, and at logs.all's LIMIT 100 cut
//   either of them may be returned: compared as sets within each timestamp. rest/logs.all (the rest
//   of a page walk, no LIMIT) likewise, every timestamp included.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EndpointSql } from "../../src/endpoints/catalog.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { Row as WireRow } from "../../src/engines/engine.ts";
import { formatTimestamp } from "../../src/time.ts";
import { endpointRequest } from "../support/catalog.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import type { Row } from "../support/googlesql.ts";
import { bigQuerySql, windowed } from "../support/queries.ts";
import { referenceEngine } from "../support/reference-engine.ts";

const SECOND = 1_000_000n;
const MINUTE = 60n * SECOND;
const HOUR = 60n * MINUTE;
const DAY = 24n * HOUR;

const P = "abcdefghijklmnop";
const OTHER = "zyxwvutsrqponmlk";
// Refs with regex metacharacters and non-ASCII letters, as first host labels of URLs.
const ODD_REFS = ["a.b", "pro+ject", "x(y)", "ab[c]", "ünïcødé", "q?*"];

type Params = Record<string, string | null>;
type Tables = Record<string, Row[]>;

const reference = referenceEngine();
let engine: DuckDbEngine;
let now = 0n;

beforeAll(async () => {
  engine = await createDuckDbEngine({ now: () => now });
});
afterAll(() => engine.close());

/** The DuckDB SQL of an endpoint's query, or of another of its queries (window/logs.all). */
const duckDbSql = (query: string) => {
  const [use, name] = query.includes("/") ? query.split("/") : ["query", query];
  return endpointRequest(name as string, "duckdb", {}, use as keyof EndpointSql).sql;
};

/** Loads `tables` into DuckDB, then runs every case on both engines and compares. */
async function expectSameResults(
  nowMicros: bigint,
  tables: Tables,
  cases: [endpoint: string, params: Params][],
): Promise<void> {
  now = nowMicros;
  await replaceTables(engine, tables);
  for (const [endpoint, params] of cases) {
    // Both engines read the window the service binds at now.
    const bound = windowed(endpoint, params, formatTimestamp(nowMicros));
    const expected = await reference.query(bigQuerySql(endpoint), {
      tables,
      params: bound,
      now: formatTimestamp(nowMicros),
    });
    const sql = duckDbSql(endpoint);
    const actual = await engine.run({ endpoint, sql, params: bound, maxRows: 1000 });
    const context = `${endpoint} ${JSON.stringify(params)} now=${formatTimestamp(nowMicros)}`;
    expectSameRows(endpoint, actual.rows, expected.rows as WireRow[], context);
  }
}

function expectSameRows(endpoint: string, actual: WireRow[], expected: WireRow[], context: string) {
  if (endpoint === "logs.all" || endpoint === "window/logs.all" || endpoint === "rest/logs.all") {
    expect(
      actual.map((r) => r.timestamp),
      context,
    ).toEqual(expected.map((r) => r.timestamp));
    const cut =
      endpoint === "logs.all" && actual.length === 100 ? actual.at(-1)?.timestamp : undefined;
    const byTimestamp = (rows: WireRow[]) =>
      rows
        .filter((r) => r.timestamp !== cut)
        .map((r) => JSON.stringify(r))
        .sort();
    expect(byTimestamp(actual), context).toEqual(byTimestamp(expected));
    return;
  }
  expect(Object.keys(actual[0] ?? {}), context).toEqual(Object.keys(expected[0] ?? {}));
  const withoutAvg = (rows: WireRow[]) => rows.map(({ avg_execution_time: _, ...rest }) => rest);
  expect(JSON.stringify(withoutAvg(actual)), context).toBe(JSON.stringify(withoutAvg(expected)));
  actual.forEach((row, i) => {
    const a = row.avg_execution_time as number | null | undefined;
    const e = expected[i]?.avg_execution_time as number | null | undefined;
    if (a == null || e == null) expect(a, context).toBe(e);
    else expect(Math.abs(a - e), context).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(e)));
  });
}

// ---------------------------------------------------------------------------------------------
// Parameter cases

const INVOCATION_INTERVALS = ["5min", "15min", "1hr", "1day", "7day", "bogus", "1DAY"];
const USAGE_INTERVALS = ["minutely", "hourly", "daily", "bogus"];
const TIERS = ["FREE", "PRO", "PAYG", "ENTERPRISE", "pro", "bogus"];
const FUNCTION_IDS = [null, "", "fn-a", "ƒn-ü", "missing"];
const PROJECT_REGEXES = [
  P,
  OTHER,
  "",
  `^https://${P}\\.`,
  `${P}|${OTHER}`,
  "a.b",
  "pro+ject",
  "x\\(y\\)",
  "ab\\[c\\]",
  "ünï",
  "\\p{L}+\\.supabase",
  "(?i)ABCDEF",
  "\\.co/rest",
  "^$",
  "q\\?",
];

const invocationCase = (project: string, interval: string, functionId: string | null) =>
  ["functions.invocation-stats", { project, function_id: functionId, interval }] as [
    string,
    Params,
  ];
const usageCase = (project: string, interval: string) =>
  ["usage.api-counts", { project, interval }] as [string, Params];
/** Bucket sizes of time ranges, in seconds: each path of the DuckDB SQL (raw rows, whole hours). */
const RANGE_BUCKETS = [1n, 5n, 60n, 300n, 3_600n, 10_800n, 86_400n, 604_800n];
/**
 * A time range as the service binds it (src/endpoints/time-range.ts): its first and last bucket,
 * `back` and `ahead` buckets from now's, aligned to the epoch by their size.
 */
function rangeOf(nowMicros: bigint, bucketSeconds: bigint, back: bigint, ahead: bigint): Params {
  const size = bucketSeconds * SECOND;
  const aligned = nowMicros - (((nowMicros % size) + size) % size);
  return {
    interval: null,
    from: formatTimestamp(aligned - back * size),
    to: formatTimestamp(aligned + ahead * size),
    bucket: String(bucketSeconds),
  };
}
const invocationRange = (project: string, functionId: string | null, range: Params) =>
  ["functions.invocation-stats", { project, function_id: functionId, ...range }] as [
    string,
    Params,
  ];
const usageRange = (project: string, range: Params) =>
  ["usage.api-counts", { project, ...range }] as [string, Params];
/** A page position as logs.all binds its cursor. */
type Position = { timestamp: string; id: string } | null;
/** logs.all's filters as the service binds them: each absent (null) unless given. */
type Filters = Partial<Record<(typeof FILTERS)[number], string | null>>;
const FILTERS = ["status", "method", "path", "search", "search_regex"] as const;
const noFilters = Object.fromEntries(FILTERS.map((name) => [name, null]));
const logsCase = (
  project: string,
  tier: string,
  start: string | null,
  end: string | null,
  cursor: Position = null,
  filters: Filters = {},
) =>
  [
    "logs.all",
    {
      project,
      project_tier: tier,
      iso_timestamp_start: start,
      iso_timestamp_end: end,
      cursor_timestamp: cursor?.timestamp ?? null,
      cursor_id: cursor?.id ?? null,
      ...noFilters,
      ...filters,
    },
  ] as [string, Params];

/** The rest of a walk after `cursor`: logs.all's parameters, the cursor always given. */
const restCase = (...args: [string, string, string | null, string | null, Position, Filters?]) => {
  const [, params] = logsCase(...args);
  return ["rest/logs.all", params] as [string, Params];
};

const windowCase = (
  project: string,
  tier: string,
  start: string | null,
  end: string | null,
  filters: Filters = {},
  after: Position = null,
) =>
  [
    "window/logs.all",
    {
      project,
      project_tier: tier,
      iso_timestamp_start: start,
      iso_timestamp_end: end,
      ...noFilters,
      ...filters,
      after_timestamp: after?.timestamp ?? null,
      after_id: after?.id ?? null,
    },
  ] as [string, Params];

// Filter values in the form the service binds them (status terms lower case, methods upper case).
// Search terms include İ and Σ, which BigQuery's LOWER maps in context (see the case-folding test).
const STATUS_TERMS = ["200", "404", "500", "503", "5xx", "4xx", "2xx", "1xx", "3xx", "302"];
const METHOD_TERMS = ["GET", "POST", "PATCH", "DELETE", "ƒN"];
const PATH_PREFIXES = [
  "/v1",
  "/rest/v1/",
  "/rest",
  "/",
  "/REST",
  "/ünï",
  "/storage/v1/object/public/a.png",
  "/graphql/v1x",
];
const SEARCH_TERMS = ["get", "GET", "%", "_", "\\", "ü", "Ü", "rest", "| 1", "a", "🚀", "İ", "Σ"];
const SEARCH_REGEXES = ["^GET", "(?i)get", "\\d", "ü|%", "^$", "a.b", "\\pL", "(?s)."];

/** One filter, over every record of a long retention: cases that select some records, not none. */
const oneFilterArb: fc.Arbitrary<Filters> = fc.oneof(
  fc.subarray(STATUS_TERMS, { minLength: 1, maxLength: 3 }).map((t) => ({ status: t.join(",") })),
  fc.subarray(METHOD_TERMS, { minLength: 1, maxLength: 2 }).map((t) => ({ method: t.join(",") })),
  fc.constantFrom(...PATH_PREFIXES).map((path) => ({ path })),
  fc.constantFrom(...SEARCH_TERMS).map((search) => ({ search })),
  fc.constantFrom(...SEARCH_REGEXES).map((search_regex) => ({ search_regex })),
);

const filtersArb: fc.Arbitrary<Filters> = fc.record(
  {
    status: fc
      .subarray(STATUS_TERMS, { minLength: 1, maxLength: 3 })
      .map((terms) => terms.join(",")),
    method: fc
      .subarray(METHOD_TERMS, { minLength: 1, maxLength: 2 })
      .map((terms) => terms.join(",")),
    path: fc.constantFrom(...PATH_PREFIXES),
    search: fc.constantFrom(...SEARCH_TERMS),
    search_regex: fc.constantFrom(...SEARCH_REGEXES),
  },
  { requiredKeys: [] },
);

// ---------------------------------------------------------------------------------------------
// Fixture rows

/** Instants on and next to every window start, bucket edge and retention limit around `now`. */
function boundaries(nowMicros: bigint): bigint[] {
  const trunc = (t: bigint, unit: bigint) => t - (((t % unit) + unit) % unit);
  const points = [nowMicros, nowMicros + HOUR];
  for (const window of [5n * MINUTE, 15n * MINUTE, HOUR, DAY, 7n * DAY, 90n * DAY]) {
    points.push(nowMicros - window);
  }
  const buckets: [bigint, bigint][] = [
    [5n * MINUTE, SECOND],
    [15n * MINUTE, MINUTE],
    [HOUR, MINUTE],
    [DAY, HOUR],
    [7n * DAY, DAY],
  ];
  for (const [window, unit] of buckets) {
    points.push(trunc(nowMicros - window, unit), trunc(nowMicros, unit) + unit);
  }
  return points.flatMap((p) => [p - 1n, p, p + 1n]);
}

const nowArb = fc.oneof(
  fc.bigInt({ min: 1_790_000_000n * SECOND, max: 1_800_000_000n * SECOND }),
  // On a whole day, hour or minute, where a window starts exactly on a bucket edge.
  fc
    .bigInt({ min: 20_700n, max: 20_800n })
    .chain((day) =>
      fc.constantFrom(day * DAY, day * DAY + 5n * HOUR, day * DAY + 5n * HOUR + 7n * MINUTE),
    ),
);

function timestampArb(nowMicros: bigint) {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...boundaries(nowMicros)) },
    { weight: 3, arbitrary: fc.bigInt({ min: nowMicros - 8n * DAY, max: nowMicros + HOUR }) },
    { weight: 2, arbitrary: fc.bigInt({ min: nowMicros - 20n * MINUTE, max: nowMicros }) },
  );
}

const textArb = fc.option(fc.string({ unit: "grapheme", maxLength: 12 }), { freq: 5 });
const statusesArb = fc.array(
  // Codes outside 100-999 too: a class matches only a 3-digit code, as LIKE "5__" does.
  fc.record({
    status_code: fc.constantFrom(null, 100, 200, 302, 399, 400, 404, 500, 503, 50, 5000, -500),
  }),
  { maxLength: 3 },
);
const refArb = fc.constantFrom(P, P, P, OTHER, ...ODD_REFS);
const pathArb = fc.option(
  fc.constantFrom(
    "/rest/v1/todos",
    "/storage/v1/object/public/a.png",
    "/auth/v1/token",
    "/realtime/v1/websocket",
    "/rest/auth/realtime/storage",
    "/graphql/v1",
    "",
    "/REST/v1",
    "/ünï/rest",
  ),
  { freq: 8 },
);
const requestArb = fc
  .record({
    ref: refArb,
    path: pathArb,
    query: fc.string({ maxLength: 6 }),
    method: fc.oneof(textArb, fc.constantFrom("GET", "get", "Post", "PATCH", "delete")),
  })
  .chain(({ ref, path, query, method }) =>
    fc.constantFrom(null, `https://${ref}.supabase.co${path ?? ""}?q=${query}`).map((url) => ({
      method,
      path,
      url: url === null ? null : url,
      host: `${ref}.supabase.co`,
    })),
  );
const executionTimeArb = fc.oneof(
  fc.constant(null),
  fc.integer({ min: 0, max: 20 }),
  fc.double({ min: 0, max: 1e6, noNaN: true, noDefaultInfinity: true }).map((x) => x + 0),
);
const invocationArb = fc.record({
  project_ref: fc.constantFrom(P, P, P, OTHER, null),
  function_id: fc.constantFrom("fn-a", "fn-a", "fn-b", null, "", "ƒn-ü"),
  execution_time_ms: executionTimeArb,
  request: fc.array(
    requestArb.map(({ method, url }) => ({ method, url })),
    { maxLength: 2 },
  ),
  response: statusesArb,
});

function tablesArb(nowMicros: bigint) {
  const timestamp = fc.option(timestampArb(nowMicros).map(formatTimestamp), { freq: 20 });
  const id = fc.option(fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }), { freq: 10 });
  return fc.record({
    function_edge_logs: fc.array(
      fc.record({
        id,
        timestamp,
        event_message: textArb,
        metadata: fc.array(invocationArb, { maxLength: 3 }),
      }),
      { maxLength: 40 },
    ),
    edge_logs: fc.array(
      fc.record({
        id,
        timestamp,
        // Random text, and messages the search filters find.
        event_message: fc.oneof(
          textArb,
          fc.constantFrom(
            "GET | 200 | ok",
            "get | 500 | rate",
            "POST 100% a_b",
            "Ünï \\ 🚀",
            "x| 1",
            "İΣ ΑΣ i",
          ),
        ),
        project: fc.constantFrom(P, P, OTHER, null),
        metadata: fc.array(
          fc.record({ request: fc.array(requestArb, { maxLength: 3 }), response: statusesArb }),
          { maxLength: 3 },
        ),
      }),
      { maxLength: 40 },
    ),
  });
}

/** Range bounds: absent, empty, a record's own timestamp, or a window edge, in Z or +02:00 form. */
function boundArb(nowMicros: bigint, tables: Tables) {
  const instants = [
    ...(tables.edge_logs?.flatMap((r) => (r.timestamp ? [r.timestamp as string] : [])) ?? []),
    ...boundaries(nowMicros).map(formatTimestamp),
  ];
  const plusTwo = (iso: string) =>
    `${formatTimestamp(BigInt(Date.parse(iso)) * 1000n + BigInt(iso.slice(23, 26)) + 2n * HOUR).slice(0, -1)}+02:00`;
  return fc.oneof(
    fc.constantFrom(null, ""),
    fc.constantFrom(...instants),
    fc.constantFrom(...instants).map(plusTwo),
  );
}

/** Cursors: none, a record's own position, or a window edge before any id. */
function cursorArb(nowMicros: bigint, tables: Tables) {
  const records = (tables.edge_logs ?? []).flatMap((r) =>
    r.timestamp ? [{ timestamp: r.timestamp as string, id: String(r.id ?? "") }] : [],
  );
  const edges = boundaries(nowMicros).map((micros) => ({
    timestamp: formatTimestamp(micros),
    id: "",
  }));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<Position>(null) },
    fc.constantFrom<Position>(...records, ...edges),
  );
}

function casesArb(nowMicros: bigint, tables: Tables) {
  const bound = boundArb(nowMicros, tables);
  const cursor = cursorArb(nowMicros, tables);
  return fc.tuple(
    fc
      .record({
        project: fc.constantFrom(P, OTHER),
        interval: fc.constantFrom(...INVOCATION_INTERVALS),
        functionId: fc.constantFrom(...FUNCTION_IDS),
      })
      .map((c) => invocationCase(c.project, c.interval, c.functionId)),
    fc
      .record({
        project: fc.constantFrom(...PROJECT_REGEXES),
        interval: fc.constantFrom(...USAGE_INTERVALS),
      })
      .map((c) => usageCase(c.project, c.interval)),
    fc
      .record({
        project: fc.constantFrom(P, OTHER),
        functionId: fc.constantFrom(...FUNCTION_IDS),
        bucket: fc.constantFrom(...RANGE_BUCKETS),
        back: fc.bigInt(0n, 60n),
        ahead: fc.bigInt(-3n, 1n),
      })
      .map((c) =>
        invocationRange(c.project, c.functionId, rangeOf(nowMicros, c.bucket, c.back, c.ahead)),
      ),
    fc
      .record({
        project: fc.constantFrom(...PROJECT_REGEXES),
        bucket: fc.constantFrom(...RANGE_BUCKETS),
        back: fc.bigInt(0n, 60n),
        ahead: fc.bigInt(-3n, 1n),
      })
      .map((c) => usageRange(c.project, rangeOf(nowMicros, c.bucket, c.back, c.ahead))),
    fc
      .record({
        project: fc.constantFrom(P, OTHER, ""),
        tier: fc.constantFrom(...TIERS),
        start: bound,
        end: bound,
        cursor,
        filters: filtersArb,
      })
      .map((c) => logsCase(c.project, c.tier, c.start, c.end, c.cursor, c.filters)),
    fc
      .record({
        project: fc.constantFrom(P, OTHER),
        tier: fc.constantFrom(...TIERS),
        start: bound,
        end: bound,
        cursor: cursor.filter((c) => c !== null),
        filters: filtersArb,
      })
      .map((c) => restCase(c.project, c.tier, c.start, c.end, c.cursor, c.filters)),
    oneFilterArb.map((filters) => logsCase(P, "PAYG", null, null, null, filters)),
    fc
      .record({
        project: fc.constantFrom(P, OTHER),
        tier: fc.constantFrom(...TIERS),
        start: bound,
        filters: filtersArb,
        after: cursor,
      })
      .map((c) => windowCase(c.project, c.tier, c.start, null, c.filters, c.after)),
  );
}

// ---------------------------------------------------------------------------------------------

describe("DuckDB SQL gives the BigQuery SQL's rows", () => {
  it("on every boundary, for every parameter case (hand-made)", async () => {
    const nowMicros = 20_778n * DAY + 5n * HOUR + 7n * MINUTE + 30n * SECOND + 123_456n;
    const stamps = boundaries(nowMicros).map(formatTimestamp);
    const tables: Tables = {
      function_edge_logs: stamps.flatMap((timestamp, i) => [
        {
          id: `f${i}`,
          timestamp,
          event_message: "POST | 200",
          metadata: [
            {
              project_ref: P,
              function_id: i % 2 ? "fn-a" : "fn-b",
              execution_time_ms: (i * 37) % 101,
              request: [],
              response: [{ status_code: i % 3 ? 200 : 500 }],
            },
          ],
        },
        // Several invocations in one record, no response, a NULL time, a NULL id.
        {
          id: i % 4 ? `g${i}` : null,
          timestamp,
          event_message: null,
          metadata: [
            {
              project_ref: P,
              function_id: "fn-a",
              execution_time_ms: null,
              request: [],
              response: [],
            },
            {
              project_ref: P,
              function_id: "",
              execution_time_ms: i / 7,
              request: [],
              response: [{ status_code: 404 }, { status_code: null }],
            },
            {
              project_ref: OTHER,
              function_id: "fn-a",
              execution_time_ms: 1,
              request: [],
              response: [],
            },
          ],
        },
      ]),
      edge_logs: stamps.flatMap((timestamp, i) => [
        {
          id: `e${i}`,
          timestamp,
          event_message: `GET | ${i}`,
          project: i % 5 ? P : OTHER,
          metadata: [
            {
              request: [
                {
                  method: "GET",
                  path: "/rest/v1/x",
                  url: `https://${P}.supabase.co/rest/v1/x`,
                  host: null,
                },
                {
                  method: "GET",
                  path: "/storage/v1/auth",
                  url: `https://${ODD_REFS[i % ODD_REFS.length]}.supabase.co/storage`,
                  host: null,
                },
              ],
              response: [{ status_code: 200 }],
            },
            {
              request: [
                {
                  method: null,
                  path: "/realtime/v1",
                  url: `https://${OTHER}.supabase.co/realtime/v1`,
                  host: null,
                },
              ],
              response: [],
            },
          ],
        },
        { id: `n${i}`, timestamp, event_message: "empty", project: P, metadata: [] },
      ]),
    };
    const start = formatTimestamp(nowMicros - 5n * MINUTE);
    await expectSameResults(nowMicros, tables, [
      ...[P, OTHER].flatMap((project) =>
        INVOCATION_INTERVALS.flatMap((interval) =>
          FUNCTION_IDS.map((functionId) => invocationCase(project, interval, functionId)),
        ),
      ),
      ...PROJECT_REGEXES.flatMap((project) =>
        USAGE_INTERVALS.map((interval) => usageCase(project, interval)),
      ),
      // Ranges reaching now, ended before it, and of one bucket.
      ...RANGE_BUCKETS.flatMap((bucket) =>
        [
          rangeOf(nowMicros, bucket, 40n, 0n),
          rangeOf(nowMicros, bucket, 40n, -3n),
          rangeOf(nowMicros, bucket, 0n, 0n),
        ].flatMap((range) => [
          ...FUNCTION_IDS.map((functionId) => invocationRange(P, functionId, range)),
          usageRange(PROJECT_REGEXES[0] as string, range),
        ]),
      ),
      ...TIERS.flatMap((tier) => [
        logsCase(P, tier, null, null),
        logsCase(P, tier, "", ""),
        logsCase(P, tier, start, null),
        logsCase(P, tier, null, start),
        logsCase(OTHER, tier, formatTimestamp(nowMicros - 2n * DAY), `${start.slice(0, -1)}+02:00`),
        logsCase(P, tier, null, null, { timestamp: start, id: "" }),
        logsCase(P, tier, null, null, { timestamp: stamps[3] as string, id: "e3" }),
        windowCase(P, tier, null, null),
        windowCase(P, tier, "0001-01-01T00:00:00Z", null),
        windowCase(P, tier, start, null),
        windowCase(OTHER, tier, null, start),
        windowCase(P, tier, null, null, {}, { timestamp: stamps[3] as string, id: "e3" }),
        windowCase(P, tier, null, null, {}, { timestamp: stamps[3] as string, id: "" }),
        restCase(P, tier, null, null, { timestamp: formatTimestamp(nowMicros), id: "" }),
        restCase(P, tier, start, null, { timestamp: stamps[3] as string, id: "e3" }),
        restCase(OTHER, tier, null, start, { timestamp: stamps[3] as string, id: "" }),
      ]),
      ...[
        { status: "2xx" },
        { status: "5xx,404" },
        { method: "GET" },
        { path: "/rest/v1/" },
        { path: "/realtime" },
        { search: "get | 1" },
        { search: "%" },
        { search_regex: "\\| [0-9]$" },
        { status: "200", method: "GET", path: "/storage/", search: "GET", search_regex: "^G" },
      ].flatMap((filters) => [
        logsCase(P, "PRO", null, null, null, filters),
        logsCase(P, "PRO", null, null, { timestamp: stamps[3] as string, id: "e3" }, filters),
        windowCase(P, "PRO", null, null, filters),
        restCase(P, "PRO", null, null, { timestamp: stamps[3] as string, id: "e3" }, filters),
      ]),
    ]);
    // Hundreds of reference-engine queries: on a loaded 2-core machine it once outran 30 s.
  }, 120_000);

  it("folds case in search as BigQuery's LOWER does: İ, ß, Σ final and not, combining marks", async () => {
    const nowMicros = 20_778n * DAY;
    const messages = [
      "İstanbul",
      "istanbul",
      "i\u0307stanbul",
      "Straße",
      "STRASSE",
      "ẞ",
      "ΟΔΥΣΣΕΥΣ",
      "ΟΔΥΣΣΕΥΣ.",
      "ΑΣ.Β",
      "Σ alone",
      "ΑΣ\u0301",
      "σ ς",
      "cafe\u0301",
      "café",
      "CAFÉ",
      "CAFE\u0301",
    ];
    const tables: Tables = {
      edge_logs: messages.map((event_message, i) => ({
        id: `m${i}`,
        timestamp: formatTimestamp(nowMicros - BigInt(i + 1) * SECOND),
        event_message,
        project: P,
        metadata: [],
      })),
    };
    const searches = ["İ", "i", "i\u0307", "ß", "ẞ", "ss", "Σ", "σ", "ς", "ΥΣ", "ΥΣΣ", "Σ.", "ΑΣ"];
    searches.push("e\u0301", "é", "É", "E\u0301");
    // After the newest record: the rest of a walk holds every message.
    const top = { timestamp: formatTimestamp(nowMicros), id: "" };
    await expectSameResults(
      nowMicros,
      tables,
      searches.flatMap((search) => [
        logsCase(P, "PRO", null, null, null, { search }),
        windowCase(P, "PRO", null, null, { search }),
        restCase(P, "PRO", null, null, top, { search }),
      ]),
    );
  });

  it("on empty tables", async () => {
    const nowMicros = 20_778n * DAY;
    await expectSameResults(nowMicros, {}, [
      invocationCase(P, "1day", null),
      usageCase(P, "daily"),
      logsCase(P, "PRO", null, null),
      windowCase(P, "PRO", null, null),
    ]);
  });

  it("on random fixture sets", async () => {
    await fc.assert(
      fc.asyncProperty(
        nowArb.chain((nowMicros) =>
          tablesArb(nowMicros).chain((tables) =>
            casesArb(nowMicros, tables).map((cases) => ({ nowMicros, tables, cases })),
          ),
        ),
        ({ nowMicros, tables, cases }) => expectSameResults(nowMicros, tables, cases),
      ),
      { numRuns: 120 },
    );
  }, 120_000);
});
