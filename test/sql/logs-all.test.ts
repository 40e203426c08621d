// Conformance of endpoints/logs.all/bigquery.sql with the rules of docs/api.md, on GoogleSQL's
// reference engine with a pinned clock. Expected rows come from the rule, not from the query.

import { describe, expect, it } from "vitest";
import type { PagingContract } from "../../src/endpoints/catalog.ts";
import { retentionDays } from "../../src/endpoints/retention.ts";
import { endpointNamed } from "../support/catalog.ts";
import {
  DAY,
  edgeLog,
  edgeMetadata,
  HOUR,
  MICROSECOND,
  MINUTE,
  OTHER_PROJECT,
  PROJECT,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import type { Params, Row } from "../support/googlesql.ts";
import { endpointQuery } from "../support/queries.ts";

const NOW = "2026-11-21T05:17:42.123456Z";

const { retention: RETENTION } = endpointNamed("logs.all").paging as PagingContract;
const query = endpointQuery(
  "logs.all",
  "edge_logs",
  { project: PROJECT, project_tier: "FREE" },
  NOW,
);
const logs = async (rows: Row[], params: Params = {}) => (await query(rows, params)).rows;

const ids = (rows: Row[]) => rows.map((r) => r.id);

describe("logs.all", () => {
  it("returns id, timestamp, event_message, metadata with their BigQuery types", async () => {
    const { columns } = await query([]);
    expect(columns.map((c) => [c.name, c.type.type_kind])).toEqual([
      ["id", "TYPE_STRING"],
      ["timestamp", "TYPE_TIMESTAMP"],
      ["event_message", "TYPE_STRING"],
      ["metadata", "TYPE_ARRAY"],
    ]);
  });

  describe.each([
    ["FREE", 1n],
    ["PRO", 7n],
    ["PAYG", 90n],
    ["ENTERPRISE", 90n],
    // Any other value, including another spelling of a known tier, gets 1 day.
    ["pro", 1n],
    ["Enterprise", 1n],
    ["TEAM", 1n],
    ["", 1n],
    [null, 1n],
  ])("project_tier %j", (tier, days) => {
    it("is the retention the service checks a cursor against before any query", () => {
      expect(retentionDays(RETENTION, tier)).toBe(Number(days));
    });

    it(`keeps records strictly after now − ${days} day(s)`, async () => {
      const start = shift(NOW, -days * DAY);
      const rows = [
        edgeLog(start, { id: "at-retention-start" }),
        edgeLog(shift(start, MICROSECOND), { id: "just-inside" }),
        edgeLog(shift(start, -DAY), { id: "a-day-older" }),
      ];
      expect(ids(await logs(rows, { project_tier: tier }))).toEqual(["just-inside"]);
    });
  });

  describe("iso_timestamp_start (exclusive) and iso_timestamp_end (inclusive)", () => {
    const instant = "2026-11-21T03:00:00.000000Z";
    const rows = [
      edgeLog(shift(instant, -MICROSECOND), { id: "before" }),
      edgeLog(instant, { id: "at" }),
      edgeLog(shift(instant, MICROSECOND), { id: "after" }),
    ];

    it.each<[string, Params, string[]]>([
      ["start at the instant", { iso_timestamp_start: instant }, ["after"]],
      ["end at the instant", { iso_timestamp_end: instant }, ["at", "before"]],
      [
        "both around the instant",
        { iso_timestamp_start: shift(instant, -MICROSECOND), iso_timestamp_end: instant },
        ["at"],
      ],
      ["start in +02:00 form", { iso_timestamp_start: "2026-11-21T05:00:00+02:00" }, ["after"]],
      ["end in +02:00 form", { iso_timestamp_end: "2026-11-21T05:00:00+02:00" }, ["at", "before"]],
      ["start in Z form, no fraction", { iso_timestamp_start: "2026-11-21T03:00:00Z" }, ["after"]],
      [
        "empty start and end",
        { iso_timestamp_start: "", iso_timestamp_end: "" },
        ["after", "at", "before"],
      ],
      ["absent start and end", {}, ["after", "at", "before"]],
      ["start after end", { iso_timestamp_start: instant, iso_timestamp_end: instant }, []],
    ])("%s", async (_, params, expected) => {
      expect(ids(await logs(rows, params))).toEqual(expected);
    });

    it("retention still applies under an earlier start", async () => {
      const old = edgeLog(shift(NOW, -2n * DAY), { id: "old" });
      const params = { iso_timestamp_start: "2026-01-01T00:00:00Z" };
      expect(ids(await logs([...rows, old], params))).toEqual(["after", "at", "before"]);
      expect(ids(await logs([...rows, old], { ...params, project_tier: "PRO" }))).toEqual([
        "after",
        "at",
        "before",
        "old",
      ]);
    });
  });

  it("returns the 100 newest records of the project, newest first", async () => {
    // 130 records, one every 7 minutes, interleaved with another project's and shuffled.
    const ours = Array.from({ length: 130 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i) * 7n * MINUTE - SECOND), { id: `ours-${i}` }),
    );
    const theirs = ours.map((r, i) =>
      edgeLog(shift(r.timestamp as string, SECOND / 2n), {
        id: `theirs-${i}`,
        project: OTHER_PROJECT,
      }),
    );
    const shuffled = [...ours, ...theirs].sort((a, b) => hash(a.id) - hash(b.id));
    const expected = Array.from({ length: 100 }, (_, i) => `ours-${i}`);
    expect(ids(await logs(shuffled, { project_tier: "PRO" }))).toEqual(expected);
  });

  describe("paging: ties broken by id, and the cursor", () => {
    const instant = shift(NOW, -HOUR);
    // Ids whose byte order differs from insertion order, a NULL id, and an id past the BMP.
    const tied = ["m", "b", "z", "a\u{1F600}", "a\u{FFFD}", "k"].map((id) =>
      edgeLog(instant, { id }),
    );
    const nullId = { ...edgeLog(instant), id: null };
    const newer = edgeLog(shift(instant, MICROSECOND), { id: "newer" });
    const older = edgeLog(shift(instant, -MICROSECOND), { id: "zz-older" });
    const rows = [older, ...tied, nullId, newer];
    // The order the rule states: timestamp descending, then id descending by UTF-8 bytes, NULL as ''.
    const byteOrder = (a: Row, b: Row) =>
      Buffer.compare(Buffer.from(String(b.id ?? "")), Buffer.from(String(a.id ?? "")));
    const tiedOrder = [...tied, nullId].sort(byteOrder).map((r) => r.id);

    it("orders records sharing a timestamp by id, descending, a NULL id last", async () => {
      expect(ids(await logs(rows))).toEqual(["newer", ...tiedOrder, "zz-older"]);
    });

    it.each(tiedOrder.map((id, i) => [String(id), i] as const))(
      "a cursor at %j gives exactly the records after it in that order",
      async (id, i) => {
        const cursor = { cursor_timestamp: instant, cursor_id: id === "null" ? "" : id };
        expect(ids(await logs(rows, cursor))).toEqual([...tiedOrder.slice(i + 1), "zz-older"]);
      },
    );

    it("a cursor between timestamps, with an empty id, starts below that instant", async () => {
      const cursor = { cursor_timestamp: instant, cursor_id: "" };
      // '' is the smallest id: nothing at the instant comes after it except a NULL id, which ties.
      expect(ids(await logs(rows, cursor))).toEqual(["zz-older"]);
    });

    it("the cursor only narrows: project, tier and range still apply", async () => {
      const theirs = edgeLog(shift(instant, -SECOND), { id: "theirs", project: OTHER_PROJECT });
      const cursor = { cursor_timestamp: shift(NOW, -MINUTE), cursor_id: "" };
      expect(ids(await logs([...rows, theirs], cursor))).toEqual([
        "newer",
        ...tiedOrder,
        "zz-older",
      ]);
      const bounded = { ...cursor, iso_timestamp_start: instant };
      expect(ids(await logs(rows, bounded))).toEqual(["newer"]);
    });
  });

  it("returns each record intact: metadata as nested arrays with zero or several elements", async () => {
    const several = [
      edgeMetadata(request("/rest/v1/todos"), request("/auth/v1/token", OTHER_PROJECT)),
      { request: [], response: [{ status_code: 500 }, { status_code: null }] },
      { request: [{ method: null, path: null, url: null, host: null }], response: [] },
    ];
    const rows = [
      edgeLog(shift(NOW, -HOUR), { id: "none", message: "no metadata", metadata: [] }),
      edgeLog(shift(NOW, -MINUTE), {
        id: "several",
        message: "several\nlines 'q'",
        metadata: several,
      }),
    ];
    expect(await logs(rows)).toEqual([
      {
        id: "several",
        timestamp: shift(NOW, -MINUTE),
        event_message: "several\nlines 'q'",
        metadata: several,
      },
      { id: "none", timestamp: shift(NOW, -HOUR), event_message: "no metadata", metadata: [] },
    ]);
  });

  it.each([
    "' OR 1=1 --",
    "x' OR 'a'='a",
    '"; DROP TABLE edge_logs; --',
    "back\\slash\\",
    "100%_done",
    "@project",
    "プロジェクト-ü-🚀",
  ])("project %j is a plain value: only a record with exactly that project", async (value) => {
    const rows = [
      edgeLog(shift(NOW, -MINUTE), { id: "exact", project: value }),
      edgeLog(shift(NOW, -MINUTE), { id: "ours" }),
      edgeLog(shift(NOW, -MINUTE), { id: "longer", project: `${value}x` }),
    ];
    expect(ids(await logs(rows, { project: value }))).toEqual(["exact"]);
  });

  it.each(["' OR 1=1 --", "PRO' OR '1'='1", "@project_tier"])(
    "project_tier %j is a plain value: an unknown tier of 1 day",
    async (tier) => {
      const rows = [
        edgeLog(shift(NOW, -HOUR), { id: "recent" }),
        edgeLog(shift(NOW, -2n * DAY), { id: "old" }),
      ];
      expect(ids(await logs(rows, { project_tier: tier }))).toEqual(["recent"]);
    },
  );
});

/** A stable pseudo-random order key. */
function hash(value: unknown): number {
  let h = 0;
  for (const ch of String(value)) h = (h * 31 + ch.charCodeAt(0)) % 1_000_003;
  return h;
}
