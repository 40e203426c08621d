// Conformance of endpoints/logs.all/window.bigquery.sql on GoogleSQL's reference engine: every record
// logs.all would return for the same parameters, oldest first (timestamp, then id), without a
// LIMIT. Expected records come from the rules, not from the query.
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

const DEFAULTS = {
  project: PROJECT,
  project_tier: "FREE",
  iso_timestamp_start: null,
  iso_timestamp_end: null,
};
const NO_CURSOR = { cursor_timestamp: null, cursor_id: null };
const query = endpointQuery("window/logs.all", "edge_logs", DEFAULTS, NOW);
const window = async (rows: Row[], params: Params = {}) =>
  (await query(rows, params)).rows.map((row) => row.id);

describe("window/logs.all", () => {
  it("returns logs.all's columns with their BigQuery types", async () => {
    const page = endpointQuery("logs.all", "edge_logs", { ...DEFAULTS, ...NO_CURSOR }, NOW);
    expect((await query([])).columns).toEqual((await page([])).columns);
  });

  it("returns no row when nothing is in range", async () => {
    expect(await window([])).toEqual([]);
    expect(await window([edgeLog(shift(NOW, -HOUR), { project: OTHER_PROJECT })])).toEqual([]);
  });

  it("returns the records inside the tier's retention, whatever the start, oldest first", async () => {
    const start = shift(NOW, -DAY);
    const rows = [
      edgeLog(start, { id: "at-retention-start" }),
      edgeLog(shift(start, 2n * MICROSECOND), { id: "second" }),
      edgeLog(shift(start, MICROSECOND), { id: "first" }),
      edgeLog(shift(NOW, -HOUR), { id: "recent" }),
    ];
    const yearOne = { iso_timestamp_start: "0001-01-01T00:00:00Z" };
    expect(await window(rows, yearOne)).toEqual(["first", "second", "recent"]);
    expect(await window(rows, { ...yearOne, project_tier: "PRO" })).toEqual([
      "at-retention-start",
      "first",
      "second",
      "recent",
    ]);
  });

  it("takes the start as exclusive and the end as inclusive, as logs.all does", async () => {
    const instant = shift(NOW, -HOUR);
    const rows = [
      edgeLog(instant, { id: "at" }),
      edgeLog(shift(instant, MICROSECOND), { id: "after" }),
    ];
    expect(await window(rows, { iso_timestamp_start: instant })).toEqual(["after"]);
    expect(await window(rows, { iso_timestamp_end: instant })).toEqual(["at"]);
    expect(
      await window(rows, { iso_timestamp_start: instant, iso_timestamp_end: instant }),
    ).toEqual([]);
  });

  it("breaks a tie of timestamps by id, a missing id first", async () => {
    const instant = shift(NOW, -HOUR);
    const rows = [
      edgeLog(instant, { id: "b" }),
      edgeLog(instant, { id: "a" }),
      edgeLog(shift(instant, MICROSECOND), { id: "0" }),
    ];
    expect(await window(rows)).toEqual(["a", "b", "0"]);
    expect(await window([...rows, { ...edgeLog(instant), id: null }])).toEqual([
      null,
      "a",
      "b",
      "0",
    ]);
  });

  it("returns the records the filters keep, as logs.all applies them", async () => {
    const rows = [
      edgeLog(shift(NOW, -3n * HOUR), { id: "oldest-200" }),
      edgeLog(shift(NOW, -2n * HOUR), {
        id: "older-500",
        message: "GET | 500 | failed",
        metadata: [{ request: [request("/rest/v1/x")], response: [{ status_code: 500 }] }],
      }),
      edgeLog(shift(NOW, -HOUR), { id: "newer-200" }),
    ];
    expect(await window(rows)).toEqual(["oldest-200", "older-500", "newer-200"]);
    expect(await window(rows, { status: "5xx" })).toEqual(["older-500"]);
    expect(await window(rows, { search: "FAILED", method: "GET", path: "/rest/" })).toEqual([
      "older-500",
    ]);
    expect(await window(rows, { search_regex: "^POST" })).toEqual([]);
  });

  it("returns the records after a resumed stream's position: a later timestamp, or the same and a greater id", async () => {
    const instant = shift(NOW, -HOUR);
    const rows = [
      edgeLog(instant, { id: "a" }),
      edgeLog(instant, { id: "c" }),
      edgeLog(shift(instant, MICROSECOND), { id: "0" }),
    ];
    const at = (id: string) => ({ after_timestamp: instant, after_id: id });
    expect(await window(rows, at("a"))).toEqual(["c", "0"]);
    expect(await window(rows, at("b"))).toEqual(["c", "0"]);
    expect(await window(rows, at("c"))).toEqual(["0"]);
    expect(await window(rows, at(""))).toEqual(["a", "c", "0"]);
    expect(
      await window(rows, { after_timestamp: shift(instant, MICROSECOND), after_id: "0" }),
    ).toEqual([]);
  });
});
