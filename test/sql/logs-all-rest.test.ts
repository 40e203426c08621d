// Conformance of endpoints/logs.all/rest.bigquery.sql on GoogleSQL's reference engine: every record
// logs.all would page through after a cursor, in its order, with no LIMIT. Expected records come
// from the rules, not from the query.
import { describe, expect, it } from "vitest";
import {
  DAY,
  edgeLog,
  HOUR,
  MICROSECOND,
  micros,
  OTHER_PROJECT,
  PROJECT,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import type { Params, Row } from "../support/googlesql.ts";
import { endpointQuery } from "../support/queries.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const TIE = shift(NOW, -HOUR);

const query = endpointQuery(
  "rest/logs.all",
  "edge_logs",
  { project: PROJECT, project_tier: "FREE", iso_timestamp_start: null, iso_timestamp_end: null },
  NOW,
);

// 150 records a second apart, 40 sharing one instant (a NULL id among them), another project's at
// the same times, and records at and past the FREE retention's edge.
const ROWS: Row[] = [
  ...Array.from({ length: 150 }, (_, i) =>
    edgeLog(shift(NOW, -BigInt(i + 1) * 30n * SECOND), { id: `s-${(i * 37) % 150}` }),
  ),
  ...Array.from({ length: 39 }, (_, i) => edgeLog(TIE, { id: `t-${(i * 7) % 39}` })),
  { ...edgeLog(TIE), id: null },
  ...Array.from({ length: 20 }, (_, i) =>
    edgeLog(shift(TIE, BigInt(i) * SECOND), { id: `o-${i}`, project: OTHER_PROJECT }),
  ),
  edgeLog(shift(NOW, -DAY), { id: "at-retention-edge" }),
  edgeLog(shift(NOW, -DAY + MICROSECOND), { id: "inside-retention" }),
  edgeLog(shift(NOW, -3n * DAY), { id: "pro-only" }),
];

/** The rule: the project's records in retention and range after the cursor, newest first, by id. */
function expected(
  cursor: { timestamp: string; id: string },
  { tierDays = 1n, start, end }: { tierDays?: bigint; start?: string; end?: string } = {},
): unknown[] {
  const key = (r: Row) => [micros(r.timestamp as string), String(r.id ?? "")] as const;
  const at = [micros(cursor.timestamp), cursor.id] as const;
  return ROWS.filter((r) => r.project === PROJECT)
    .filter((r) => key(r)[0] > micros(NOW) - tierDays * DAY)
    .filter((r) => start === undefined || key(r)[0] > micros(start))
    .filter((r) => end === undefined || key(r)[0] <= micros(end))
    .filter((r) => key(r)[0] < at[0] || (key(r)[0] === at[0] && key(r)[1] < at[1]))
    .sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      return x[0] !== y[0] ? (x[0] < y[0] ? 1 : -1) : x[1] < y[1] ? 1 : x[1] > y[1] ? -1 : 0;
    })
    .map((r) => r.id);
}

const rest = async (params: Params) => (await query(ROWS, params)).rows.map((row) => row.id);
const past = (timestamp: string, id: string) => ({ cursor_timestamp: timestamp, cursor_id: id });

describe("rest/logs.all", () => {
  it("returns logs.all's columns with their BigQuery types", async () => {
    const { columns } = await query([], past(NOW, ""));
    expect(columns.map((c) => [c.name, c.type.type_kind])).toEqual([
      ["id", "TYPE_STRING"],
      ["timestamp", "TYPE_TIMESTAMP"],
      ["event_message", "TYPE_STRING"],
      ["metadata", "TYPE_ARRAY"],
    ]);
  });

  it("returns every record after the cursor in logs.all's order, past 100 and through a tie", async () => {
    const all = await rest(past(NOW, ""));
    expect(all.length).toBeGreaterThan(100);
    expect(all).toEqual(expected({ timestamp: NOW, id: "" }));
    for (const id of ["t-20", "t-0", "", "zzz"]) {
      expect(await rest(past(TIE, id)), id).toEqual(expected({ timestamp: TIE, id }));
    }
  });

  it("keeps the tier's retention and the time range of the walk", async () => {
    const cursor = { timestamp: TIE, id: "t-5" };
    expect(await rest({ ...past(TIE, "t-5"), project_tier: "PRO" })).toEqual(
      expected(cursor, { tierDays: 7n }),
    );
    const start = shift(TIE, -40n * 30n * SECOND);
    const end = shift(TIE, -HOUR);
    expect(
      await rest({ ...past(TIE, "t-5"), iso_timestamp_start: start, iso_timestamp_end: end }),
    ).toEqual(expected(cursor, { start, end }));
  });

  it("applies logs.all's filters", async () => {
    const failed = edgeLog(shift(TIE, -SECOND), {
      id: "failed",
      metadata: [{ request: [request("/rest/v1/x")], response: [{ status_code: 503 }] }],
    });
    const { rows } = await query([...ROWS, failed], { ...past(TIE, ""), status: "5xx" });
    expect(rows.map((row) => row.id)).toEqual(["failed"]);
  });
});
