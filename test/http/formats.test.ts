// Response formats end to end (app → embedded engine): JSON, NDJSON
// and CSV by Accept or by a suffix on the name, each checked against the JSON rows; CSV through a real
// CSV parser.
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import type { JsonValue, QueryEngine, Row } from "../../src/engines/engine.ts";
import { withQuery } from "../support/catalog.ts";
import {
  edgeLog,
  edgeMetadata,
  edgeRequests,
  functionCall,
  MINUTE,
  OTHER_PROJECT,
  PROJECT,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import { type ServiceOptions, startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const USAGE_ID = "fa6e0509-d5f7-468e-b429-8c4aecf8563d";

const JSON_TYPE = "application/json; charset=utf-8";
const NDJSON_TYPE = "application/x-ndjson; charset=utf-8";
const CSV_TYPE = "text/csv; charset=utf-8";
const AVAILABLE = ["application/json", "application/x-ndjson", "text/csv"];

// Values a CSV writer must quote or keep intact.
const MESSAGES = [
  'GET | 200 | said "hi", then left',
  "two\nlines, one cell",
  "windows\r\nline end",
  '"',
  ",",
  "  spaces kept  ",
  "",
  "unicode: é ß 日本語 עברית 😀 \u00a0\u2028",
];

const TABLES = {
  edge_logs: [
    ...MESSAGES.map((message, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * MINUTE), {
        message,
        // nested values with the same hazards, to come out as JSON text in one cell
        metadata: [edgeMetadata(request(`/rest/v1/${encodeURIComponent(message)}`))],
      }),
    ),
    edgeRequests(shift(NOW, -70n * MINUTE), request("/auth/v1/token"), request("/storage/v1/o")),
  ],
  function_edge_logs: [
    functionCall(shift(NOW, -3n * MINUTE), { ms: 10 }),
    functionCall(shift(NOW, -3n * MINUTE + SECOND), { ms: 30, statuses: [500] }),
  ],
};

const LOGS = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=PRO`;
const STATS = `/api/endpoints/functions.invocation-stats?project=${PROJECT}&interval=1hr`;
const USAGE_QUERY = `project=${encodeURIComponent(`^https://${PROJECT}\\.`)}&interval=daily`;
const USAGE = `/api/endpoints/usage.api-counts?${USAGE_QUERY}`;
const ENDPOINTS = {
  "logs.all": LOGS,
  "functions.invocation-stats": STATS,
  "usage.api-counts": USAGE,
};

/** A service on the fixtures, caching, with the queries that reach its engine counted. */
async function service(options: Omit<ServiceOptions, "now"> = {}) {
  const engine = { runs: 0 };
  const counted = (inner: QueryEngine): QueryEngine => ({
    dialect: inner.dialect,
    run: (query) => {
      engine.runs++;
      return inner.run(query);
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  });
  const started = await startService({
    now: NOW,
    tables: TABLES,
    config: { cache: { maxEntries: 100, maxBytes: 1_000_000 } },
    cache: {},
    wrapEngine: counted,
    ...options,
  });
  return { ...started, engine };
}

const rowsOf = (body: string) => (JSON.parse(body) as { result: Row[] }).result;

/** What a JSON value is in a CSV cell: strings as they are, NULL empty, nested values as JSON text. */
function cell(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

describe("CSV", () => {
  it.each(Object.entries(ENDPOINTS))(
    "%s: parses back with a CSV parser to the JSON rows, a header row first",
    async (_name, url) => {
      const { get } = await service();
      const rows = rowsOf((await get(url)).body);
      const response = await get(url, { accept: "text/csv" });

      expect(rows.length).toBeGreaterThan(0);
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toBe(CSV_TYPE);
      const [header, ...records] = parse(response.body) as string[][];
      const columns = Object.keys(rows[0] as Row);
      expect(header).toEqual(columns);
      expect(records).toEqual(rows.map((row) => columns.map((column) => cell(row[column]))));
    },
  );

  it("keeps quotes, commas, newlines and unicode in values, quoted as RFC 4180 says", async () => {
    const { get } = await service();
    const rows = rowsOf((await get(LOGS)).body);
    const response = await get(LOGS, { accept: "text/csv" });
    const records = parse(response.body, { columns: true }) as Record<string, string>[];

    expect(records.map((record) => record.event_message)).toEqual(
      rows.map((row) => row.event_message),
    );
    expect(records.slice(0, MESSAGES.length).map((record) => record.event_message)).toEqual(
      MESSAGES,
    );
    expect(records.map((record) => JSON.parse(record.metadata as string))).toEqual(
      rows.map((row) => row.metadata),
    );
    // TIMESTAMP as in JSON
    expect(records.map((record) => record.timestamp)).toEqual(rows.map((row) => row.timestamp));
    expect(records[0]?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // CRLF between records, quotes doubled inside a quoted field
    expect(response.body.startsWith("id,timestamp,event_message,metadata\r\n")).toBe(true);
    expect(response.body.endsWith("\r\n")).toBe(true);
    expect(response.body).toContain('"GET | 200 | said ""hi"", then left"');
    expect(response.body).toContain('"two\nlines, one cell"');
  });

  it("writes DATETIME as in JSON", async () => {
    const { get } = await service();
    const rows = rowsOf((await get(USAGE)).body);
    const records = parse((await get(USAGE, { accept: "text/csv" })).body, {
      columns: true,
    }) as Record<string, string>[];
    expect(records.map((record) => record.timestamp)).toEqual(rows.map((row) => row.timestamp));
    expect(records[0]?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  });

  it("answers an empty result with the header row alone in CSV, and nothing in NDJSON", async () => {
    const { get } = await service();
    const url = `/api/endpoints/logs.all?project=${OTHER_PROJECT}&project_tier=PRO`;
    expect(rowsOf((await get(url)).body)).toEqual([]);
    const csv = await get(url, { accept: "text/csv" });
    expect(csv.statusCode).toBe(200);
    expect(csv.body).toBe("id,timestamp,event_message,metadata\r\n");
    const ndjson = await get(url, { accept: "application/x-ndjson" });
    expect(ndjson.statusCode).toBe(200);
    expect(ndjson.body).toBe("");
  });
});

describe("CSV opened in a spreadsheet", () => {
  it("writes a text cell a spreadsheet would run as a formula with a ' before it; numbers as they are", async () => {
    const formulas = [
      '=HYPERLINK("https://evil.example","x")',
      "+1+2",
      "-1+2",
      "@SUM(A1)",
      "\t=1",
      "\r=1",
    ];
    const harmless = ["GET | 200 | a=1", "'quoted already"];
    const { get } = await startService({
      now: NOW,
      tables: {
        edge_logs: [...formulas, ...harmless].map((message, i) =>
          edgeLog(shift(NOW, -BigInt(i + 1) * MINUTE), { message }),
        ),
        function_edge_logs: [functionCall(shift(NOW, -MINUTE), { ms: -7 })],
      },
    });
    const logs = parse((await get(LOGS, { accept: "text/csv" })).body, {
      columns: true,
    }) as Record<string, string>[];
    expect(logs.map((record) => record.event_message)).toEqual([
      ...formulas.map((message) => `'${message}`),
      ...harmless,
    ]);
    // A negative number is a number to a spreadsheet, not a formula: it keeps its sign and type.
    const stats = await get(STATS, { accept: "text/csv" });
    const [bucket] = parse(stats.body, { columns: true }) as Record<string, string>[];
    expect(bucket).toMatchObject({ min_execution_time: "-7", max_execution_time: "-7" });
    expect(rowsOf((await get(STATS)).body)[0]).toMatchObject({ min_execution_time: -7 });
  });
});

describe("NDJSON", () => {
  it.each(Object.entries(ENDPOINTS))(
    "%s: one line per row, each the JSON row",
    async (_name, url) => {
      const { get } = await service();
      const rows = rowsOf((await get(url)).body);
      const response = await get(url, { accept: "application/x-ndjson" });

      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toBe(NDJSON_TYPE);
      expect(response.body.endsWith("\n")).toBe(true);
      const lines = response.body.slice(0, -1).split("\n");
      expect(lines.map((line) => JSON.parse(line))).toEqual(rows);
    },
  );
});

describe("a result cut at 1000 rows", () => {
  it("is marked X-Result-Truncated in every format", async () => {
    const numbers = "SELECT x FROM range(1, 1501) AS t(x) WHERE $project != $interval";
    const { get } = await service({ catalog: withQuery("usage.api-counts", "duckdb", numbers) });
    const url = "/api/endpoints/usage.api-counts?project=a&interval=daily";

    const csv = await get(url, { accept: "text/csv" });
    const ndjson = await get(url, { accept: "application/x-ndjson" });
    expect(csv.headers["x-result-truncated"]).toBe("true");
    expect(ndjson.headers["x-result-truncated"]).toBe("true");
    expect(parse(csv.body)).toHaveLength(1001);
    expect(ndjson.body.split("\n")).toHaveLength(1001);
  });
});

describe("choosing the format", () => {
  it("follows Accept: media types, wildcards and q-values; JSON when there is no preference", async () => {
    const { get } = await service();
    const cases: [Record<string, string>, string][] = [
      [{}, JSON_TYPE],
      [{ accept: "" }, JSON_TYPE],
      [{ accept: "*/*" }, JSON_TYPE],
      [{ accept: "application/json" }, JSON_TYPE],
      [{ accept: "application/json; charset=utf-8" }, JSON_TYPE],
      [{ accept: "application/*" }, JSON_TYPE],
      [{ accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" }, JSON_TYPE],
      [{ accept: "application/x-ndjson" }, NDJSON_TYPE],
      [{ accept: "text/csv" }, CSV_TYPE],
      [{ accept: "TEXT/CSV" }, CSV_TYPE],
      [{ accept: "text/*" }, CSV_TYPE],
      [{ accept: "text/csv;q=0.5, application/x-ndjson;q=0.9" }, NDJSON_TYPE],
      [{ accept: "application/json;q=0.1, text/csv" }, CSV_TYPE],
      [{ accept: "application/json;q=0, */*;q=0.1" }, NDJSON_TYPE],
      [{ accept: "text/html, text/csv;q=0.2" }, CSV_TYPE],
    ];
    for (const [headers, type] of cases) {
      const response = await get(STATS, headers);
      expect(response.statusCode, headers.accept).toBe(200);
      expect(response.headers["content-type"], headers.accept).toBe(type);
      expect(response.headers.vary, headers.accept).toBe("Accept");
    }
  });

  it("takes a suffix on the name over Accept, under /api/endpoints and /query", async () => {
    const { get } = await service();
    const cases: [string, string][] = [
      [`/api/endpoints/usage.api-counts.csv?${USAGE_QUERY}`, CSV_TYPE],
      [`/api/endpoints/usage.api-counts.ndjson?${USAGE_QUERY}`, NDJSON_TYPE],
      [`/api/endpoints/usage.api-counts.json?${USAGE_QUERY}`, JSON_TYPE],
      [`/api/endpoints/query/usage.api-counts.csv?${USAGE_QUERY}`, CSV_TYPE],
    ];
    const byAccept = await get(USAGE, { accept: "text/csv" });
    for (const [url, type] of cases) {
      const response = await get(url, { accept: "text/html" });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers["content-type"], url).toBe(type);
      // a suffixed URL names one representation: Accept plays no part
      expect(response.headers.vary, url).toBeUndefined();
    }
    const bySuffix = await get(`/api/endpoints/usage.api-counts.csv?${USAGE_QUERY}`);
    expect(bySuffix.body).toBe(byAccept.body);
    expect(bySuffix.headers.etag).toBe(byAccept.headers.etag);
  });

  it("takes no suffix on a UUID nor an unknown one", async () => {
    const { get, engine } = await service();
    for (const path of [
      `query/${USAGE_ID}.csv`,
      "usage.api-counts.xml",
      "usage.api-counts.CSV",
      "no.such.endpoint.csv",
      ".csv",
    ]) {
      const response = await get(`/api/endpoints/${path}?${USAGE_QUERY}`);
      expect(response.statusCode, path).toBe(404);
      expect(JSON.parse(response.body).error.code, path).toBe("endpoint_not_found");
    }
    expect(engine.runs).toBe(0);
  });

  it("answers an Accept it cannot serve with 406 and the list, without querying", async () => {
    const { get, engine } = await service();
    for (const accept of [
      "text/html",
      "application/xml, text/plain;q=0.5",
      "application/json;q=0",
      "text/csv; header=absent",
      "nonsense",
    ]) {
      const response = await get(STATS, { accept });
      expect(response.statusCode, accept).toBe(406);
      expect(response.headers["content-type"], accept).toBe(JSON_TYPE);
      expect(response.headers.vary, accept).toBe("Accept");
      expect(JSON.parse(response.body), accept).toEqual({
        error: {
          code: "not_acceptable",
          message: "Accept names none of the formats this path gives; available lists them.",
          available: AVAILABLE,
        },
      });
    }
    expect(engine.runs).toBe(0);
  });

  it("answers errors in JSON whatever the format asked for", async () => {
    const { get } = await service();
    for (const [url, accept] of [
      ["/api/endpoints/usage.api-counts?interval=daily", "text/csv"],
      ["/api/endpoints/usage.api-counts.csv?interval=daily", "text/csv"],
      // a bad request is told so before its Accept is looked at
      ["/api/endpoints/usage.api-counts?interval=daily", "text/html"],
    ] as const) {
      const response = await get(url, { accept });
      expect(response.statusCode, url).toBe(400);
      expect(response.headers["content-type"], url).toBe(JSON_TYPE);
      expect(JSON.parse(response.body).error.code, url).toBe("invalid_params");
    }
  });
});

describe("caching", () => {
  it("serves every format of a cached endpoint from the one cached result, each with its own strong ETag", async () => {
    const { get, engine } = await service();
    const json = await get(USAGE);
    const ndjson = await get(USAGE, { accept: "application/x-ndjson" });
    const csv = await get(USAGE, { accept: "text/csv" });
    const csvAgain = await get(USAGE, { accept: "text/csv" });

    expect(engine.runs).toBe(1);
    expect([json, ndjson, csv, csvAgain].map((r) => r.headers["x-cache"])).toEqual([
      "MISS",
      "HIT",
      "HIT",
      "HIT",
    ]);
    const etags = [json, ndjson, csv].map((response) => response.headers.etag as string);
    for (const etag of etags) expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(new Set(etags).size).toBe(3);
    expect(csvAgain.headers.etag).toBe(csv.headers.etag);
    expect(csvAgain.body).toBe(csv.body);
    for (const response of [json, ndjson, csv]) {
      expect(response.headers.vary).toBe("Accept");
      expect(response.headers["cache-control"]).toBe("private, max-age=900");
    }
  });

  it("answers 304 per representation: only to the ETag of the format asked for", async () => {
    const { get, engine } = await service();
    const accepts = ["application/json", "application/x-ndjson", "text/csv"];
    const first = await Promise.all(accepts.map((accept) => get(USAGE, { accept })));

    for (const [i, accept] of accepts.entries()) {
      const own = first[i];
      const etag = own?.headers.etag as string;
      const notModified = await get(USAGE, { accept, "if-none-match": `W/${etag}` });
      expect(notModified.statusCode, accept).toBe(304);
      expect(notModified.body, accept).toBe("");
      expect(notModified.headers.etag, accept).toBe(etag);
      expect(notModified.headers.vary, accept).toBe("Accept");

      const others = first.filter((_, j) => j !== i).map((r) => r.headers.etag as string);
      const modified = await get(USAGE, { accept, "if-none-match": others.join(", ") });
      expect(modified.statusCode, accept).toBe(200);
      expect(modified.body, accept).toBe(own?.body);
    }
    expect(engine.runs).toBe(1);
  });

  it("answers an uncached endpoint in any format with no-store and no ETag", async () => {
    const { get } = await service();
    const csv = await get(LOGS, { accept: "text/csv" });
    expect(csv.headers["cache-control"]).toBe("no-store");
    expect(csv.headers.etag).toBeUndefined();
  });
});
