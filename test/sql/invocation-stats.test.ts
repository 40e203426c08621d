// Conformance of endpoints/functions.invocation-stats/bigquery.sql with the rules of
// docs/api.md, on GoogleSQL's reference engine with a pinned clock. Expected rows come from the rule: explicit
// values, or the small model below, never from the query's own output.
import { describe, expect, it } from "vitest";
import {
  DAY,
  functionCall,
  functionLog,
  HOUR,
  type InvocationFields,
  invocation,
  MICROSECOND,
  MINUTE,
  micros,
  OTHER_PROJECT,
  PROJECT,
  SECOND,
  shift,
  truncate,
} from "../support/fixtures.ts";
import type { Params, Row } from "../support/googlesql.ts";
import { endpointQuery } from "../support/queries.ts";

const NOW = "2026-11-21T05:17:42.123456Z";

const query = endpointQuery(
  "functions.invocation-stats",
  "function_edge_logs",
  { project: PROJECT, interval: "1hr" },
  NOW,
);
const invocationStats = async (rows: Row[], params: Params = {}) =>
  (await query(rows, params)).rows;

// ---------------------------------------------------------------------------------------------
// The rule as a plain-JS model

const WINDOWS = new Map([
  ["5min", { window: 5n * MINUTE, bucket: SECOND }],
  ["15min", { window: 15n * MINUTE, bucket: MINUTE }],
  ["1hr", { window: HOUR, bucket: MINUTE }],
  ["1day", { window: DAY, bucket: HOUR }],
  ["7day", { window: 7n * DAY, bucket: DAY }],
]);
const FALLBACK = { window: DAY, bucket: HOUR };

/** Element `i` of the harness's exact APPROX_QUANTILES(x, 100): rank floor(i·(n−1)/100). */
function quantile(sorted: number[], i: number): number | null {
  return sorted.length === 0 ? null : (sorted[Math.floor((i * (sorted.length - 1)) / 100)] ?? null);
}

/** The first and last bucket of an interval's window at NOW, and the bucket size. */
function spanOf(interval: string | null | undefined) {
  const { window, bucket } = WINDOWS.get(interval ?? "") ?? FALLBACK;
  return {
    first: truncate(shift(NOW, -window), bucket),
    last: truncate(NOW, bucket),
    bucket,
  };
}

/**
 * The rows of the buckets of `bucket` µs from `first` to `last` (an interval's, or a time range's
 * aligned to its bucket) for `params`' project and function.
 */
function expectedStats(
  rows: Row[],
  params: Params,
  { first: firstBucket, last: lastBucket, bucket } = spanOf(params.interval),
): Row[] {
  const first = micros(firstBucket);
  const last = micros(lastBucket);
  const buckets = new Map<string, { ids: unknown[]; failed: boolean[]; ms: number[] }>();
  for (const row of rows) {
    const start = truncate(row.timestamp as string, bucket);
    if (micros(start) < first || micros(start) > last) continue;
    for (const m of row.metadata as Row[]) {
      if (m.project_ref !== params.project) continue;
      if (params.function_id && m.function_id !== params.function_id) continue;
      const group = buckets.get(start) ?? { ids: [], failed: [], ms: [] };
      buckets.set(start, group);
      group.ids.push(row.id);
      group.failed.push((m.response as Row[]).some((r) => (r.status_code as number) >= 400));
      if (m.execution_time_ms !== null) group.ms.push(m.execution_time_ms as number);
    }
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => (micros(a) < micros(b) ? -1 : 1))
    .map(([timestamp, { ids, failed, ms }]) => {
      const sorted = [...ms].sort((a, b) => a - b);
      return {
        timestamp,
        min_execution_time: sorted[0] ?? null,
        max_execution_time: sorted.at(-1) ?? null,
        avg_execution_time:
          sorted.length === 0 ? null : expect.closeTo(sum(sorted) / sorted.length, 9),
        p95_execution_time: quantile(sorted, 95),
        p99_execution_time: quantile(sorted, 99),
        count: ids.filter((id) => id !== null).length,
        error_count: ids.filter((id, i) => id !== null && failed[i]).length,
      };
    });
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** Only the counting columns, for tests about which invocations count. */
function counts(rows: Row[]): Row[] {
  return rows.map(({ timestamp, count, error_count }) => ({ timestamp, count, error_count }));
}

/** The rules of the buckets from `first` to `last`, of `bucket` µs each, that `params` ask for. */
function bucketRules(
  params: Params,
  { first, last, bucket }: { first: string; last: string; bucket: bigint },
) {
  it("includes a record at exactly the first bucket, not one 1 µs before it", async () => {
    const rows = [functionCall(first), functionCall(shift(first, -MICROSECOND))];
    expect(counts(await invocationStats(rows, params))).toEqual([
      { timestamp: first, count: 1, error_count: 0 },
    ]);
  });

  it("counts records up to the end of the last bucket, none after", async () => {
    const end = shift(last, bucket);
    const rows = [
      functionCall(last),
      functionCall(shift(last, bucket / 2n)),
      functionCall(shift(end, -MICROSECOND)),
      functionCall(end),
      functionCall(shift(NOW, DAY * 30n)),
    ];
    expect(counts(await invocationStats(rows, params))).toEqual([
      { timestamp: last, count: 3, error_count: 0 },
    ]);
  });

  it("truncates to the granularity, omits empty buckets and sorts ascending", async () => {
    const second = shift(first, bucket);
    const fourth = shift(first, 3n * bucket);
    const rows = [
      functionCall(shift(fourth, bucket / 2n)),
      functionCall(shift(second, bucket - MICROSECOND)),
      functionCall(second),
      functionCall(shift(second, bucket / 3n)),
    ];
    expect(counts(await invocationStats(rows, params))).toEqual([
      { timestamp: second, count: 3, error_count: 0 },
      { timestamp: fourth, count: 1, error_count: 0 },
    ]);
  });

  it("agrees with the model on a mixed workload", async () => {
    const rows = mixedWorkload(first, bucket);
    const actual = await invocationStats(rows, params);
    expect(actual.length).toBeGreaterThan(2);
    expect(actual).toEqual(
      expectedStats(rows, { project: PROJECT, ...params }, { first, last, bucket }),
    );
  });
}

// ---------------------------------------------------------------------------------------------

describe("functions.invocation-stats", () => {
  it("returns its columns in order, with their BigQuery types", async () => {
    const { columns } = await query([]);
    expect(columns.map((c) => [c.name, c.type.type_kind])).toEqual([
      ["timestamp", "TYPE_TIMESTAMP"],
      ["min_execution_time", "TYPE_DOUBLE"],
      ["max_execution_time", "TYPE_DOUBLE"],
      ["avg_execution_time", "TYPE_DOUBLE"],
      ["p95_execution_time", "TYPE_DOUBLE"],
      ["p99_execution_time", "TYPE_DOUBLE"],
      ["count", "TYPE_INT64"],
      ["error_count", "TYPE_INT64"],
    ]);
  });

  // First and last buckets written out from the interval table of docs/api.md for NOW = 05:17:42.123456Z.
  describe.each([
    ["5min", SECOND, "2026-11-21T05:12:42.000000Z", "2026-11-21T05:17:42.000000Z"],
    ["15min", MINUTE, "2026-11-21T05:02:00.000000Z", "2026-11-21T05:17:00.000000Z"],
    ["1hr", MINUTE, "2026-11-21T04:17:00.000000Z", "2026-11-21T05:17:00.000000Z"],
    ["1day", HOUR, "2026-11-20T05:00:00.000000Z", "2026-11-21T05:00:00.000000Z"],
    ["7day", DAY, "2026-11-14T00:00:00.000000Z", "2026-11-21T00:00:00.000000Z"],
    // Any other value: 1 day window, 1 hour buckets.
    ["2day", HOUR, "2026-11-20T05:00:00.000000Z", "2026-11-21T05:00:00.000000Z"],
    ["1DAY", HOUR, "2026-11-20T05:00:00.000000Z", "2026-11-21T05:00:00.000000Z"],
    ["", HOUR, "2026-11-20T05:00:00.000000Z", "2026-11-21T05:00:00.000000Z"],
    [null, HOUR, "2026-11-20T05:00:00.000000Z", "2026-11-21T05:00:00.000000Z"],
  ])("interval %j", (interval, bucket, first, last) => {
    bucketRules({ interval }, { first, last, bucket });
  });

  // A time range as the service binds it (src/endpoints/time-range.ts): its first and last bucket,
  // aligned to the epoch by their size, which is any whole number of seconds.
  describe.each([
    [
      "5 s, the last bucket trunc(now)",
      5n * SECOND,
      "2026-11-21T05:10:00.000000Z",
      "2026-11-21T05:17:40.000000Z",
    ],
    [
      "5 min, ended yesterday",
      5n * MINUTE,
      "2026-11-20T20:00:00.000000Z",
      "2026-11-20T23:55:00.000000Z",
    ],
    ["3 h over days", 3n * HOUR, "2026-11-17T00:00:00.000000Z", "2026-11-21T03:00:00.000000Z"],
    [
      "7 days from the epoch's Thursdays",
      7n * DAY,
      truncate("2026-10-01T00:00:00Z", 7n * DAY),
      truncate(NOW, 7n * DAY),
    ],
  ])("a time range of %s", (_, bucket, first, last) => {
    bucketRules(
      { interval: null, from: first, to: last, bucket: String(bucket / SECOND) },
      { first, last, bucket },
    );
  });
  describe("function_id", () => {
    const at = shift(NOW, -MINUTE);
    const rows = [
      functionCall(at, { functionId: "fn-a", statuses: [500] }),
      functionCall(at, { functionId: "fn-b" }),
      functionCall(at, { functionId: null }),
      functionCall(at, { functionId: "" }),
      functionCall(at, { functionId: "fn-a", project: OTHER_PROJECT }),
    ];
    const bucket = truncate(at, MINUTE);

    it.each([
      ["absent", undefined],
      ["NULL", null],
      ["empty", ""],
    ])("when %s includes every function of the project", async (_, functionId) => {
      expect(counts(await invocationStats(rows, { function_id: functionId }))).toEqual([
        { timestamp: bucket, count: 4, error_count: 1 },
      ]);
    });

    it("when set includes only that function", async () => {
      expect(counts(await invocationStats(rows, { function_id: "fn-a" }))).toEqual([
        { timestamp: bucket, count: 1, error_count: 1 },
      ]);
      expect(await invocationStats(rows, { function_id: "fn-missing" })).toEqual([]);
    });
  });

  describe("what counts as an invocation", () => {
    const at = shift(NOW, -MINUTE);
    const bucket = truncate(at, MINUTE);
    const single = async (...rows: Row[]) => counts(await invocationStats(rows));

    it.each<[string, number, InvocationFields]>([
      ["status 399", 0, { statuses: [399] }],
      ["status 400", 1, { statuses: [400] }],
      ["status 503", 1, { statuses: [503] }],
      ["no response element", 0, { statuses: [] }],
      ["several failing response elements", 1, { statuses: [200, 404, 500] }],
    ])("%s: count 1, error_count %i", async (_, errors, fields) => {
      expect(await single(functionCall(at, fields))).toEqual([
        { timestamp: bucket, count: 1, error_count: errors },
      ]);
    });

    it("each metadata element of the project is one invocation; other projects' are not", async () => {
      const record = functionLog(
        at,
        invocation({ statuses: [500] }),
        invocation(),
        invocation({ project: OTHER_PROJECT, statuses: [500] }),
        invocation({ project: null }),
      );
      expect(await single(record)).toEqual([{ timestamp: bucket, count: 2, error_count: 1 }]);
    });

    it("records with no metadata element or only other projects' never count", async () => {
      expect(
        await single(
          functionLog(at),
          functionCall(at, { project: OTHER_PROJECT, statuses: [500] }),
        ),
      ).toEqual([]);
    });

    it("count and error_count are counts of record ids: a NULL id counts in neither", async () => {
      const anonymous = { ...functionCall(at, { statuses: [500] }), id: null };
      expect(await single(anonymous, functionCall(at))).toEqual([
        { timestamp: bucket, count: 1, error_count: 0 },
      ]);
    });
  });

  describe("execution time statistics", () => {
    const at = shift(NOW, -MINUTE);
    const bucket = truncate(at, MINUTE);
    const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

    // p95/p99 are elements 95/99 of APPROX_QUANTILES(x, 100); on the exact shim element i is the
    // value at rank floor(i·(n−1)/100) of the sorted non-NULL values (0-based).
    it.each<[string, (number | null)[], Row]>([
      ["1..100", range(100), { min: 1, max: 100, avg: 50.5, p95: 95, p99: 99 }], // ranks 94, 98
      ["1..7", range(7), { min: 1, max: 7, avg: 4, p95: 6, p99: 6 }], // ranks 5, 5
      ["1..20", range(20), { min: 1, max: 20, avg: 10.5, p95: 19, p99: 19 }], // ranks 18, 18
      ["a single value", [42.5], { min: 42.5, max: 42.5, avg: 42.5, p95: 42.5, p99: 42.5 }],
      [
        "duplicates",
        [3, 1, 9, 2, 3, 1, 2, 3, 2, 3],
        { min: 1, max: 9, avg: 2.9, p95: 3, p99: 3 }, // ranks 8, 8 of 1 1 2 2 2 3 3 3 3 9
      ],
      ["NULL times", [null, 7, null, 3], { min: 3, max: 7, avg: 5, p95: 3, p99: 3 }], // ranks 0, 0
      ["only NULL times", [null, null], { min: null, max: null, avg: null, p95: null, p99: null }],
    ])("%s", async (_, times, expected) => {
      // Reversed so that the query, not the fixture order, does the sorting.
      const rows = [...times].reverse().map((ms) => functionCall(at, { ms }));
      const [row, ...rest] = await invocationStats(rows);
      expect(rest).toEqual([]);
      expect(row).toEqual({
        timestamp: bucket,
        min_execution_time: expected.min,
        max_execution_time: expected.max,
        avg_execution_time:
          expected.avg === null ? null : expect.closeTo(expected.avg as number, 9),
        p95_execution_time: expected.p95,
        p99_execution_time: expected.p99,
        count: times.length,
        error_count: 0,
      });
    });
  });

  describe("parameter values are data, never SQL", () => {
    const at = shift(NOW, -MINUTE);

    it.each(TRICKY_VALUES)(
      "project %j matches only a record whose project is exactly that",
      async (value) => {
        const rows = [
          functionCall(at, { project: value, ms: 1 }),
          functionCall(at, { project: PROJECT, ms: 2 }),
          functionCall(at, { project: `${value}x`, ms: 3 }),
        ];
        const result = await invocationStats(rows, { project: value });
        expect(result.map((r) => [r.count, r.min_execution_time])).toEqual([[1, 1]]);
      },
    );

    it.each(TRICKY_VALUES)("function_id %j matches only that function", async (value) => {
      const rows = [
        functionCall(at, { functionId: value, ms: 1 }),
        functionCall(at, { functionId: "fn-hello", ms: 2 }),
      ];
      const result = await invocationStats(rows, { function_id: value });
      expect(result.map((r) => [r.count, r.min_execution_time])).toEqual([[1, 1]]);
    });
  });
});

/** Values that would change a query spliced into SQL text. */
const TRICKY_VALUES = [
  "' OR 1=1 --",
  "x' OR 'a'='a",
  '"; DROP TABLE function_edge_logs; --',
  "back\\slash\\",
  "100%_done",
  "@project",
  "プロジェクト-ü-🚀",
];

/**
 * Several buckets from just before the window to past its end: mixed projects, functions,
 * statuses, times, empty and multi-element metadata.
 */
function mixedWorkload(first: string, bucket: bigint): Row[] {
  const at = (buckets: bigint, fraction = 0n) => shift(first, buckets * bucket + fraction);
  return [
    functionCall(at(0n, -MICROSECOND), { ms: 1000, statuses: [500] }),
    functionCall(at(0n), { ms: 12, statuses: [201] }),
    functionCall(at(0n, bucket / 2n), { ms: 30, statuses: [404] }),
    functionCall(at(0n, bucket - MICROSECOND), { ms: 7.25, functionId: "fn-other" }),
    functionCall(at(0n), { ms: 99, project: OTHER_PROJECT }),
    functionLog(at(2n, bucket / 5n)),
    functionLog(
      at(2n, bucket / 4n),
      invocation({ ms: 40, statuses: [400, 502] }),
      invocation({ ms: 41.5, statuses: [] }),
      invocation({ ms: 5, project: OTHER_PROJECT, statuses: [500] }),
    ),
    functionCall(at(3n), { ms: null, statuses: [301] }),
    functionCall(at(3n, 1n), { ms: 8 }),
    functionCall(at(5n, bucket / 2n), { ms: 0.5, statuses: [399] }),
    functionCall(shift(NOW, -MICROSECOND), { ms: 60, statuses: [500] }),
    functionCall(shift(truncate(NOW, bucket), bucket), { ms: 70 }),
  ];
}
