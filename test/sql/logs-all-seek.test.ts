// Conformance of queries/bigquery/seek/logs.all.sql on GoogleSQL's reference engine: the oldest
// record logs.all would return for the same parameters, in its order (timestamp, then id), or no
// row. Expected records come from the rules, not from the query.
import { describe, expect, it } from "vitest";
import {
  DAY,
  edgeLog,
  HOUR,
  MICROSECOND,
  OTHER_PROJECT,
  PROJECT,
  request,
  shift,
} from "../support/fixtures.ts";
import type { Params, Row } from "../support/googlesql.ts";
import { endpointQuery } from "../support/queries.ts";

const NOW = "2026-11-21T05:17:42.123456Z";

const query = endpointQuery(
  "seek/logs.all",
  "edge_logs",
  { project: PROJECT, project_tier: "FREE", iso_timestamp_start: null, iso_timestamp_end: null },
  NOW,
);
const oldest = async (rows: Row[], params: Params = {}) =>
  (await query(rows, params)).rows.map((row) => row.id);

describe("seek/logs.all", () => {
  it("returns the id and timestamp of one record with their BigQuery types", async () => {
    const { columns } = await query([]);
    expect(columns.map((c) => [c.name, c.type.type_kind])).toEqual([
      ["id", "TYPE_STRING"],
      ["timestamp", "TYPE_TIMESTAMP"],
    ]);
  });

  it("returns no row when nothing is in range", async () => {
    expect(await oldest([])).toEqual([]);
    expect(await oldest([edgeLog(shift(NOW, -HOUR), { project: OTHER_PROJECT })])).toEqual([]);
  });

  it("returns the oldest record inside the tier's retention, whatever the start", async () => {
    const start = shift(NOW, -DAY);
    const rows = [
      edgeLog(start, { id: "at-retention-start" }),
      edgeLog(shift(start, 2n * MICROSECOND), { id: "second" }),
      edgeLog(shift(start, MICROSECOND), { id: "first" }),
      edgeLog(shift(NOW, -HOUR), { id: "recent" }),
    ];
    const yearOne = { iso_timestamp_start: "0001-01-01T00:00:00Z" };
    expect(await oldest(rows, yearOne)).toEqual(["first"]);
    expect(await oldest(rows, { ...yearOne, project_tier: "PRO" })).toEqual(["at-retention-start"]);
  });

  it("takes the start as exclusive and the end as inclusive, as logs.all does", async () => {
    const instant = shift(NOW, -HOUR);
    const rows = [
      edgeLog(instant, { id: "at" }),
      edgeLog(shift(instant, MICROSECOND), { id: "after" }),
    ];
    expect(await oldest(rows, { iso_timestamp_start: instant })).toEqual(["after"]);
    expect(await oldest(rows, { iso_timestamp_end: instant })).toEqual(["at"]);
    expect(
      await oldest(rows, { iso_timestamp_start: instant, iso_timestamp_end: instant }),
    ).toEqual([]);
  });

  it("breaks a tie of timestamps by id, a missing id first", async () => {
    const instant = shift(NOW, -HOUR);
    const rows = [
      edgeLog(instant, { id: "b" }),
      edgeLog(instant, { id: "a" }),
      edgeLog(shift(instant, MICROSECOND), { id: "0" }),
    ];
    expect(await oldest(rows)).toEqual(["a"]);
    expect(await oldest([...rows, { ...edgeLog(instant), id: null }])).toEqual([null]);
  });

  it("returns the oldest record the filters keep, as logs.all applies them", async () => {
    const rows = [
      edgeLog(shift(NOW, -3n * HOUR), { id: "oldest-200" }),
      edgeLog(shift(NOW, -2n * HOUR), {
        id: "older-500",
        message: "GET | 500 | failed",
        metadata: [{ request: [request("/rest/v1/x")], response: [{ status_code: 500 }] }],
      }),
      edgeLog(shift(NOW, -HOUR), { id: "newer-200" }),
    ];
    expect(await oldest(rows)).toEqual(["oldest-200"]);
    expect(await oldest(rows, { status: "5xx" })).toEqual(["older-500"]);
    expect(await oldest(rows, { search: "FAILED", method: "GET", path: "/rest/" })).toEqual([
      "older-500",
    ]);
    expect(await oldest(rows, { search_regex: "^POST" })).toEqual([]);
  });

  it("returns the oldest record after a resumed stream's position: a later timestamp, or the same and a greater id", async () => {
    const instant = shift(NOW, -HOUR);
    const rows = [
      edgeLog(instant, { id: "a" }),
      edgeLog(instant, { id: "c" }),
      edgeLog(shift(instant, MICROSECOND), { id: "0" }),
    ];
    const at = (id: string) => ({ after_timestamp: instant, after_id: id });
    expect(await oldest(rows, at("a"))).toEqual(["c"]);
    expect(await oldest(rows, at("b"))).toEqual(["c"]);
    expect(await oldest(rows, at("c"))).toEqual(["0"]);
    expect(await oldest(rows, at(""))).toEqual(["a"]);
    expect(
      await oldest(rows, { after_timestamp: shift(instant, MICROSECOND), after_id: "0" }),
    ).toEqual([]);
  });
});
