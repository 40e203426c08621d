// Conformance of the filters of endpoints/logs.all/bigquery.sql (status, method, path, search,
// search_regex) on GoogleSQL's reference engine: the records each filter keeps are computed here
// from the rule (a record matches a metadata filter when any of its metadata elements does;
// filters combine with AND), not taken from the query. Values reach the SQL as the service
// normalises them: status terms lower case, methods upper case, each once, comma-separated.
import { describe, expect, it } from "vitest";
import { edgeLog, HOUR, MINUTE, PROJECT, shift } from "../support/fixtures.ts";
import type { Params, Row } from "../support/googlesql.ts";
import { endpointQuery } from "../support/queries.ts";

const NOW = "2026-11-21T05:17:42.123456Z";

const query = endpointQuery(
  "logs.all",
  "edge_logs",
  { project: PROJECT, project_tier: "FREE" },
  NOW,
);

interface Shape {
  id: string;
  message: string | null;
  /** Metadata elements: each with its requests (method, path) and response status codes. */
  elements: {
    requests: [method: string | null, path: string | null][];
    statuses: (number | null)[];
  }[];
}

const SHAPES: Shape[] = [
  { id: "no-metadata", message: "GET | 200 | nothing recorded", elements: [] },
  { id: "empty-element", message: "empty element", elements: [{ requests: [], statuses: [] }] },
  {
    id: "rest-200",
    message: "GET | 200 | https://x.supabase.co/rest/v1/todos",
    elements: [{ requests: [["GET", "/rest/v1/todos"]], statuses: [200] }],
  },
  {
    id: "rest-500-lower-get",
    message: "get | 500 | Internal error: rate limit reached",
    elements: [{ requests: [["get", "/rest/v1/"]], statuses: [500] }],
  },
  {
    id: "rest-v10-503",
    message: "POST | 503 | upstream 100% busy",
    elements: [{ requests: [["Post", "/rest/v10/rpc"]], statuses: [503] }],
  },
  {
    id: "rest-v1-bare-404",
    message: "PATCH | 404 | a_b not found",
    elements: [{ requests: [["PATCH", "/rest/v1"]], statuses: [404] }],
  },
  {
    id: "null-status-and-method",
    message: "back\\slash path C:\\temp",
    elements: [{ requests: [[null, null]], statuses: [null] }],
  },
  {
    id: "several-elements",
    message: "Rocket 🚀 launched 𐐀DESERET",
    elements: [
      { requests: [["DELETE", "/storage/v1/object"]], statuses: [204] },
      {
        requests: [
          ["GET", "/auth/v1/user"],
          ["OPTIONS", "/rest/v1/x"],
        ],
        statuses: [401, 502],
      },
    ],
  },
  {
    id: "several-statuses",
    message: "HEAD | 5000 | odd codes",
    elements: [{ requests: [["HEAD", "/realtime/v1/websocket"]], statuses: [5000, 50, 399] }],
  },
  {
    id: "null-message",
    message: null,
    elements: [{ requests: [["PUT", "/rest/v1/a"]], statuses: [201] }],
  },
  {
    id: "percent-underscore",
    message: "100%_done with 50% and x_y",
    elements: [{ requests: [["GET", "/rest/v1/%_"]], statuses: [302] }],
  },
];

const rows: Row[] = SHAPES.map((shape, i) =>
  edgeLog(shift(NOW, -BigInt(i + 1) * MINUTE), {
    id: shape.id,
    message: shape.message as string,
    metadata: shape.elements.map((element) => ({
      request: element.requests.map(([method, path]) => ({ method, path, url: null, host: null })),
      response: element.statuses.map((status_code) => ({ status_code })),
    })),
  }),
).map((row, i) => ({ ...row, event_message: SHAPES[i]?.message ?? null }));

/** The rule of each filter, on one record. */
const RULES: Record<string, (shape: Shape, value: string) => boolean> = {
  status: (shape, value) =>
    shape.elements.some((element) =>
      element.statuses.some((code) =>
        value
          .split(",")
          .some(
            (term) =>
              code !== null && new RegExp(`^${term.replace(/x/g, "\\d")}$`).test(String(code)),
          ),
      ),
    ),
  method: (shape, value) =>
    shape.elements.some((element) =>
      element.requests.some(
        ([method]) => method !== null && value.split(",").includes(method.toUpperCase()),
      ),
    ),
  path: (shape, value) =>
    shape.elements.some((element) =>
      element.requests.some(([, path]) => path?.startsWith(value) === true),
    ),
  search: (shape, value) => shape.message?.toLowerCase().includes(value.toLowerCase()) === true,
  search_regex: (shape, value) =>
    shape.message !== null && new RegExp(value, "u").test(shape.message),
};

/** The ids the rules keep, newest first (the fixture's order). */
function expectedIds(filters: Record<string, string>): string[] {
  return SHAPES.filter((shape) =>
    Object.entries(filters).every(([param, value]) => RULES[param]?.(shape, value)),
  ).map((shape) => shape.id);
}

const ids = async (params: Params) => (await query(rows, params)).rows.map((row) => row.id);

const CASES: Record<string, string>[] = [
  { status: "500" },
  { status: "5xx" },
  { status: "4xx,5xx" },
  { status: "404,204" },
  { status: "3xx" },
  { status: "1xx" },
  { method: "GET" },
  { method: "POST,PATCH" },
  { method: "OPTIONS" },
  { method: "TRACE" },
  { path: "/rest/v1/" },
  { path: "/rest/v1" },
  { path: "/rest/v10" },
  { path: "/rest/v1/%_" },
  { path: "/" },
  { search: "rate limit" },
  { search: "RATE LIMIT" },
  { search: "100%" },
  { search: "%_" },
  { search: "a_b" },
  { search: "_" },
  { search: "\\" },
  { search: "c:\\TEMP" },
  { search: "🚀" },
  { search: "𐐨deseret" },
  { search_regex: "^(GET|get) \\|" },
  { search_regex: "5\\d\\d" },
  { search_regex: "🚀|𐐀" },
  { status: "5xx", path: "/rest/v1/" },
  { status: "5xx", method: "GET", search: "error" },
  { method: "GET", path: "/auth/" },
  { status: "401", path: "/storage/" },
  { status: "2xx", method: "PUT", path: "/rest/v1/a" },
];

describe("logs.all filters", () => {
  it("with none given, answer every record of the window", async () => {
    expect(await ids({})).toEqual(SHAPES.map((shape) => shape.id));
    const nulls = { status: null, method: null, path: null, search: null, search_regex: null };
    expect(await ids(nulls)).toEqual(SHAPES.map((shape) => shape.id));
  });

  it.each(CASES.map((filters) => [JSON.stringify(filters), filters] as const))(
    "%s keeps exactly the records the rule keeps",
    async (_, filters) => {
      expect(await ids(filters)).toEqual(expectedIds(filters));
    },
  );

  it("tell the fixture's records apart: no case keeps them all, and most keep some", () => {
    const kept = CASES.map((filters) => expectedIds(filters).length);
    expect(kept.every((n) => n < SHAPES.length)).toBe(true);
    expect(kept.filter((n) => n > 0).length).toBeGreaterThan(CASES.length - 5);
  });

  it("filters only narrow: the project, the window and the cursor still apply", async () => {
    const theirs = edgeLog(shift(NOW, -MINUTE), { id: "theirs", project: "someone-else" });
    const old = edgeLog(shift(NOW, -48n * HOUR), { id: "old" });
    const everyStatus = { path: "/", status: "2xx,3xx,4xx,5xx" };
    const filtered = await query([...rows, theirs, old], everyStatus);
    expect(filtered.rows.map((r) => r.id)).toEqual(expectedIds(everyStatus));
    const cursor = { cursor_timestamp: shift(NOW, -3n * MINUTE), cursor_id: "" };
    expect(await ids({ ...cursor, status: "5xx" })).toEqual(
      expectedIds({ status: "5xx" }).filter((id) => SHAPES.findIndex((s) => s.id === id) >= 3),
    );
  });
});
