// Conformance of endpoints/usage.api-counts/bigquery.sql with the rules of docs/api.md, on
// GoogleSQL's reference engine with a pinned clock. Expected rows come from the rule, not from the query.
import { describe, expect, it } from "vitest";
import {
  DAY,
  edgeLog,
  edgeMetadata,
  edgeRequests,
  HOUR,
  MICROSECOND,
  MINUTE,
  micros,
  OTHER_PROJECT,
  PROJECT,
  request,
  shift,
  truncate,
  utcDatetime,
} from "../support/fixtures.ts";
import type { Params, Row } from "../support/googlesql.ts";
import { endpointQuery } from "../support/queries.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const PROJECT_REGEX = `^https://${PROJECT}\\.`;

const query = endpointQuery(
  "usage.api-counts",
  "edge_logs",
  { project: PROJECT_REGEX, interval: "hourly" },
  NOW,
);
const usage = async (rows: Row[], params: Params = {}) => (await query(rows, params)).rows;

// ---------------------------------------------------------------------------------------------
// The rule as a plain-JS model

const AREAS = { rest: "/rest", storage: "/storage", auth: "/auth", realtime: "/realtime" };
const WINDOWS = new Map([
  ["minutely", { window: 60n * MINUTE, bucket: MINUTE }],
  ["hourly", { window: HOUR, bucket: HOUR }],
  ["daily", { window: 7n * DAY, bucket: DAY }],
]);

/**
 * The rows of an interval's window (from now − its length, no upper bound), or of a time range's
 * `first` bucket to the end of its `last`, in buckets of `bucket` µs.
 */
function expectedUsage(
  rows: Row[],
  interval: string | null,
  urlPattern: RegExp,
  range?: { first: string; last: string; bucket: bigint },
): Row[] {
  const span = WINDOWS.get(interval ?? "") ?? { window: 0n, bucket: 1n };
  const bucket = range?.bucket ?? span.bucket;
  const start = micros(range?.first ?? shift(NOW, -span.window));
  const end = range ? micros(range.last) + bucket : undefined;
  const buckets = new Map<string, Row>();
  for (const row of rows) {
    const at = micros(row.timestamp as string);
    if (at < start || (end !== undefined && at >= end)) continue;
    const key = truncate(row.timestamp as string, bucket);
    for (const m of row.metadata as Row[]) {
      for (const r of m.request as Row[]) {
        if (!urlPattern.test(r.url as string)) continue;
        const totals = buckets.get(key) ?? totalsAt(key, {});
        buckets.set(key, totals);
        for (const [area, part] of Object.entries(AREAS)) {
          if ((r.path as string).includes(part)) (totals[`total_${area}_requests`] as number)++;
        }
      }
    }
  }
  return [...buckets.keys()]
    .sort((a, b) => (micros(a) < micros(b) ? -1 : 1))
    .map((key) => buckets.get(key) as Row);
}

/** An output row at the bucket starting at `instant`, zeros except the given totals. */
function totalsAt(
  instant: string,
  totals: { rest?: number; storage?: number; auth?: number; realtime?: number },
): Row {
  return {
    timestamp: utcDatetime(instant),
    total_rest_requests: totals.rest ?? 0,
    total_storage_requests: totals.storage ?? 0,
    total_auth_requests: totals.auth ?? 0,
    total_realtime_requests: totals.realtime ?? 0,
  };
}

// ---------------------------------------------------------------------------------------------

describe("usage.api-counts", () => {
  it("returns its columns in order; timestamp is a DATETIME", async () => {
    const { columns } = await query([]);
    expect(columns.map((c) => [c.name, c.type.type_kind])).toEqual([
      ["timestamp", "TYPE_DATETIME"],
      ["total_rest_requests", "TYPE_INT64"],
      ["total_storage_requests", "TYPE_INT64"],
      ["total_auth_requests", "TYPE_INT64"],
      ["total_realtime_requests", "TYPE_INT64"],
    ]);
  });

  // Window starts (not truncated) and their bucket as a UTC DATETIME, written out from the interval
  // table of docs/api.md for NOW = 05:17:42.123456Z.
  describe.each([
    ["minutely", MINUTE, "2026-11-21T04:17:42.123456Z", "2026-11-21T04:17:00"],
    ["hourly", HOUR, "2026-11-21T04:17:42.123456Z", "2026-11-21T04:00:00"],
    ["daily", DAY, "2026-11-14T05:17:42.123456Z", "2026-11-14T00:00:00"],
  ])("interval %s", (interval, bucket, start, firstBucket) => {
    const params = { interval };
    const rest = (at: string) => edgeRequests(at, request("/rest/v1/todos"));

    it("counts from exactly now − window, not 1 µs before and not from its truncation", async () => {
      const rows = [
        rest(start),
        rest(shift(start, -MICROSECOND)),
        rest(truncate(start, bucket)),
        rest(shift(start, 1n)),
      ];
      expect(await usage(rows, params)).toEqual([
        {
          timestamp: firstBucket,
          total_rest_requests: 2,
          total_storage_requests: 0,
          total_auth_requests: 0,
          total_realtime_requests: 0,
        },
      ]);
    });

    it("has no upper bound: records after now count in their buckets", async () => {
      const later = shift(NOW, 3n * bucket);
      const rows = [rest(NOW), rest(shift(NOW, MICROSECOND)), rest(later)];
      expect(await usage(rows, params)).toEqual([
        totalsAt(truncate(NOW, bucket), { rest: 2 }),
        totalsAt(truncate(later, bucket), { rest: 1 }),
      ]);
    });

    it("truncates to the granularity, omits empty buckets and sorts ascending", async () => {
      const second = shift(truncate(start, bucket), 2n * bucket);
      const rows = [
        edgeRequests(shift(second, bucket + bucket / 3n), request("/storage/v1/object/a")),
        edgeRequests(shift(second, bucket - MICROSECOND), request("/auth/v1/user")),
        edgeRequests(second, request("/rest/v1/todos"), request("/realtime/v1/websocket")),
      ];
      expect(await usage(rows, params)).toEqual([
        totalsAt(second, { rest: 1, auth: 1, realtime: 1 }),
        totalsAt(shift(second, bucket), { storage: 1 }),
      ]);
    });

    it("agrees with the model on a mixed workload", async () => {
      const rows = mixedWorkload(start, bucket);
      const actual = await usage(rows, params);
      expect(actual.length).toBeGreaterThan(2);
      expect(actual).toEqual(expectedUsage(rows, interval, new RegExp(PROJECT_REGEX)));
    });
  });

  // A time range as the service binds it (src/endpoints/time-range.ts): its first and last bucket,
  // aligned to the epoch by their size, which is any whole number of seconds.
  describe.each([
    [
      "1 min, the last bucket trunc(now)",
      MINUTE,
      "2026-11-21T04:00:00.000000Z",
      "2026-11-21T05:17:00.000000Z",
    ],
    [
      "5 min, ended yesterday",
      5n * MINUTE,
      "2026-11-20T20:00:00.000000Z",
      "2026-11-20T23:55:00.000000Z",
    ],
    ["3 h over days", 3n * HOUR, "2026-11-17T00:00:00.000000Z", "2026-11-21T03:00:00.000000Z"],
    ["1 day", DAY, "2026-11-01T00:00:00.000000Z", "2026-11-21T00:00:00.000000Z"],
  ])("a time range of %s", (_, bucket, first, last) => {
    const params = { interval: null, from: first, to: last, bucket: String(bucket / 1_000_000n) };
    const rest = (at: string) => edgeRequests(at, request("/rest/v1/todos"));

    it("counts from exactly its first bucket, not 1 µs before", async () => {
      const rows = [rest(first), rest(shift(first, -MICROSECOND)), rest(shift(first, 1n))];
      expect(await usage(rows, params)).toEqual([totalsAt(first, { rest: 2 })]);
    });

    it("counts up to the end of its last bucket, none after", async () => {
      const end = shift(last, bucket);
      const rows = [rest(last), rest(shift(end, -MICROSECOND)), rest(end), rest(shift(NOW, DAY))];
      expect(await usage(rows, params)).toEqual([totalsAt(last, { rest: 2 })]);
    });

    it("agrees with the model on a mixed workload", async () => {
      const rows = mixedWorkload(first, bucket);
      const actual = await usage(rows, params);
      expect(actual.length).toBeGreaterThan(2);
      expect(actual).toEqual(
        expectedUsage(rows, null, new RegExp(PROJECT_REGEX), { first, last, bucket }),
      );
    });
  });

  it("returns no rows for an interval outside the table", async () => {
    const rows = [edgeRequests(shift(NOW, -MINUTE), request("/rest/v1/todos"))];
    for (const interval of ["weekly", "Hourly", "", null]) {
      expect(await usage(rows, { interval })).toEqual([]);
    }
  });

  describe("API areas", () => {
    const at = shift(NOW, -MINUTE);
    const bucket = truncate(at, HOUR);

    it("counts a request in every area whose substring its path contains (case-sensitive)", async () => {
      const paths = [
        "/rest/v1/todos",
        "/storage/v1/object/public/a.png",
        "/auth/v1/token",
        "/realtime/v1/websocket",
        "/rest/v1/rpc/auth", // rest and auth
        "/functions/v1/restore", // "/rest" as a substring of "/restore"
        "/REST/v1/todos", // case differs: no area
        "/Storage/v1/object/b.png",
        "/AUTH/v1/token",
        "/Realtime/v1/websocket",
        "/graphql/v1",
      ];
      const rows = [edgeRequests(at, ...paths.map((path) => request(path)))];
      expect(await usage(rows)).toEqual([
        totalsAt(bucket, { rest: 3, storage: 1, auth: 2, realtime: 1 }),
      ]);
    });

    it("gives zeros, not NULLs, for a bucket whose requests match no area", async () => {
      const rows = [edgeRequests(at, request("/graphql/v1"), request("/functions/v1/hello"))];
      expect(await usage(rows)).toEqual([totalsAt(bucket, {})]);
    });

    it("counts each matching request element of each metadata element once", async () => {
      const record = edgeLog(at, {
        metadata: [
          edgeMetadata(request("/rest/v1/a"), request("/rest/v1/b", OTHER_PROJECT)),
          edgeMetadata(request("/rest/v1/c"), request("/auth/v1/d")),
          edgeMetadata(),
        ],
      });
      const empty = edgeLog(at, { metadata: [] });
      expect(await usage([record, empty])).toEqual([totalsAt(bucket, { rest: 2, auth: 1 })]);
    });
  });

  describe("project is a regular expression over the request URL", () => {
    const at = shift(NOW, -MINUTE);
    const bucket = truncate(at, HOUR);
    const rows = ["abc", "abcdef", "xabc", "ABC", "zzz"].map((ref) =>
      edgeRequests(at, request("/rest/v1/todos", ref)),
    );

    it.each([
      ["abc", 3], // partial match anywhere: abc, abcdef, xabc
      ["^https://abc\\.", 1],
      ["abc\\.supabase\\.co/rest/", 2], // abc, xabc
      ["^abc", 0], // anchored at the start of the URL, which is https://
      ["todos$", 5],
      ["(?i)^https://abc\\.", 2], // abc, ABC
      ["https://(abc|zzz)\\.", 2],
    ])("%j matches %i request(s)", async (regex, matched) => {
      const expected = matched === 0 ? [] : [totalsAt(bucket, { rest: matched })];
      expect(await usage(rows, { project: regex })).toEqual(expected);
    });

    it("filters on the URL, not on the record's project column", async () => {
      const record = edgeLog(at, {
        project: OTHER_PROJECT,
        metadata: [edgeMetadata(request("/rest/v1/todos"))],
      });
      expect(await usage([record])).toEqual([totalsAt(bucket, { rest: 1 })]);
    });

    // Regex metacharacters are the value's own business (project is an RE2 regex); these have none.
    it.each([
      "' OR 1=1 --",
      "x' OR 'a'='a",
      '"; DROP TABLE edge_logs; --',
      "100%_done",
      "@project",
      "プロジェクト-ü-🚀",
    ])("%j is a plain value: only a URL containing it counts", async (value) => {
      const tricky = { ...request("/rest/v1/todos"), url: `https://${value}/rest/v1/todos` };
      const rows = [edgeRequests(at, tricky, request("/rest/v1/todos"), request("/auth/v1/user"))];
      expect(await usage(rows, { project: value })).toEqual([totalsAt(bucket, { rest: 1 })]);
    });
  });
});

/** Requests of several projects and areas around the window start and in later buckets. */
function mixedWorkload(start: string, bucket: bigint): Row[] {
  const first = truncate(start, bucket);
  const at = (buckets: bigint, offset = 0n) => shift(first, buckets * bucket + offset);
  return [
    edgeRequests(shift(start, -MICROSECOND), request("/rest/v1/a")),
    edgeRequests(start, request("/rest/v1/a"), request("/storage/v1/b")),
    edgeRequests(at(1n), request("/auth/v1/token"), request("/auth/v1/user", OTHER_PROJECT)),
    edgeRequests(
      at(1n, bucket / 2n),
      request("/realtime/v1/websocket"),
      request("/rest/v1/rpc/auth"),
    ),
    edgeLog(at(1n, bucket - MICROSECOND), { metadata: [] }),
    edgeRequests(at(3n), request("/graphql/v1")),
    edgeLog(at(4n, bucket / 5n), {
      metadata: [edgeMetadata(request("/storage/v1/x")), edgeMetadata(request("/storage/v1/y"))],
    }),
    edgeRequests(shift(NOW, bucket * 2n), request("/rest/v1/later")),
  ];
}
