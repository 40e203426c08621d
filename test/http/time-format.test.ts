// `time_format=epoch_ms|rfc3339` end to end (app → embedded engine; follow and watch over real
// HTTP): every endpoint, format and stream writes its TIMESTAMP and DATETIME columns as epoch
// milliseconds or RFC 3339 with `Z`, from the one cached result; without it, the answer is the one
// without it, byte for byte, and a bad value is a 400 naming the parameter.
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import type { Row } from "../../src/engines/engine.ts";
import { cachedService } from "../support/cached-service.ts";
import { edgeLog, functionCall, MINUTE, PROJECT, SECOND, shift } from "../support/fixtures.ts";
import { FOLLOW, FOLLOW_CLOCK, open, QUERY, records } from "../support/follow-client.ts";
import { API_KEY, startService } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const TENANT_KEY = "tenant-key-0123456789abcdef";

const TABLES = {
  edge_logs: [
    edgeLog(shift(NOW, -3n * MINUTE), { id: "three-minutes-ago" }),
    edgeLog(shift(NOW, -90n * MINUTE), { id: "ninety-minutes-ago" }),
  ],
  function_edge_logs: [
    functionCall(shift(NOW, -3n * MINUTE), { ms: 10 }),
    functionCall(shift(NOW, -2n * MINUTE), { ms: 30, statuses: [500] }),
  ],
};

const USAGE_QUERY = `project=${encodeURIComponent(`^https://${PROJECT}\\.`)}&interval=hourly`;
/** Each endpoint's plain path with a valid query, and the SQL type of its time column. */
const ENDPOINTS = [
  ["logs.all", `/api/endpoints/logs.all?project=${PROJECT}&project_tier=PRO`, "TIMESTAMP"],
  [
    "functions.invocation-stats",
    `/api/endpoints/functions.invocation-stats?project=${PROJECT}&interval=1hr`,
    "TIMESTAMP",
  ],
  ["usage.api-counts", `/api/endpoints/usage.api-counts?${USAGE_QUERY}`, "DATETIME"],
] as const;
const ACCEPTS = {
  json: "application/json",
  ndjson: "application/x-ndjson",
  csv: "text/csv",
} as const;

/** The rows of a body in `format`, CSV cells as text. */
function rowsIn(format: keyof typeof ACCEPTS, body: string): Row[] {
  if (format === "json") return (JSON.parse(body) as { result: Row[] }).result;
  if (format === "ndjson")
    return body
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  return parse(body, { columns: true }) as Row[];
}

/** A time column's instant as the test reads the spec: a TIMESTAMP has its zone, a DATETIME is UTC. */
function epochMs(value: string, type: "TIMESTAMP" | "DATETIME"): number {
  if (type === "TIMESTAMP") expect(value).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  else expect(value).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  return Date.parse(type === "TIMESTAMP" ? value : `${value}Z`);
}

/** What each format makes of `time_format` on the time column, from the answer without it. */
function expected(
  rows: Row[],
  type: "TIMESTAMP" | "DATETIME",
  timeFormat: "epoch_ms" | "rfc3339",
  format: keyof typeof ACCEPTS,
): Row[] {
  return rows.map((row) => {
    const value = String(row.timestamp);
    const ms = epochMs(value, type);
    // RFC 3339 keeps the microseconds a TIMESTAMP is written with: the spec's form, zone and all.
    const rfc3339 = type === "TIMESTAMP" ? value : `${value}.000000Z`;
    const presented = timeFormat === "epoch_ms" ? ms : rfc3339;
    return { ...row, timestamp: format === "csv" ? String(presented) : presented };
  });
}

describe("time_format", () => {
  it.each(ENDPOINTS)(
    "%s: every format writes the time column as epoch ms or RFC 3339 with Z, from one engine query",
    async (_name, url, type) => {
      const { service, engine } = await cachedService(NOW, TABLES);
      for (const [format, accept] of Object.entries(ACCEPTS) as [keyof typeof ACCEPTS, string][]) {
        const plain = await service.get(url, { accept });
        expect(plain.statusCode).toBe(200);
        const rows = rowsIn(format, plain.body);
        expect(rows.length).toBeGreaterThan(0);
        for (const timeFormat of ["epoch_ms", "rfc3339"] as const) {
          const presented = await service.get(`${url}&time_format=${timeFormat}`, { accept });
          expect(presented.statusCode).toBe(200);
          expect(presented.headers["content-type"]).toBe(plain.headers["content-type"]);
          expect(rowsIn(format, presented.body), `${format} ${timeFormat}`).toEqual(
            expected(rows, type, timeFormat, format),
          );
          // Another representation of the same value: its own ETag where its bytes differ.
          if (plain.headers.etag) {
            expect(presented.headers.etag === plain.headers.etag).toBe(
              presented.body === plain.body,
            );
          }
          if (format === "json" && timeFormat === "epoch_ms") {
            expect(presented.body).toMatch(/"timestamp":\d{13}[,}]/);
          }
        }
        // Empty counts as absent; without it, the answer it was before any time format was asked.
        const empty = await service.get(`${url}&time_format=`, { accept });
        expect(empty.body).toBe(plain.body);
        const again = await service.get(url, { accept });
        expect(again.body).toBe(plain.body);
        expect(again.headers.etag).toBe(plain.headers.etag);
      }
      // A cached endpoint's one result answered every format and time format.
      if (!url.includes("logs.all")) expect(engine.runs).toBe(1);
    },
  );

  it("is a 400 naming it for any other value, on answers and streams", async () => {
    const { get } = await startService({ now: NOW, tables: TABLES, cache: {} });
    for (const url of [
      `${ENDPOINTS[1][1]}&time_format=epoch_s`,
      `/api/endpoints/functions.invocation-stats/watch?project=${PROJECT}&interval=1hr&time_format=iso`,
      `/api/endpoints/logs.all/follow?${QUERY}&time_format=EPOCH_MS`,
      `${ENDPOINTS[1][1]}&time_format=epoch_ms&time_format=rfc3339`,
    ]) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(400);
      const { error } = JSON.parse(response.body);
      expect(error.code).toBe("invalid_params");
      expect(error.details.map((detail: { param: string }) => detail.param)).toEqual([
        "time_format",
      ]);
    }
  });

  it("lets a scope neither fix nor forbid it: a credential with fixed params may ask for any", async () => {
    const keysFile = temporaryFile("keys.json", {
      keys: [
        {
          name: "tenant",
          sha256: sha256Hex(TENANT_KEY),
          scopes: [{ endpoint: "functions.invocation-stats", fixed_params: { project: PROJECT } }],
        },
      ],
    });
    const { get } = await startService({
      now: NOW,
      tables: TABLES,
      keysFile: new KeysFile(keysFile),
    });
    const tenant = { "x-api-key": TENANT_KEY };
    const url = "/api/endpoints/functions.invocation-stats?interval=1hr&time_format=epoch_ms";
    const answer = await get(url, tenant);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(typeof JSON.parse(answer.body).result[0].timestamp).toBe("number");
    // The scope still judges the endpoint's own parameters, and refuses before a bad time format.
    const other = await get(`${url}&project=someone-else`, tenant);
    expect(other.statusCode).toBe(403);
    const refusedFirst = await get(`${url}&project=someone-else&time_format=bad`, tenant);
    expect(JSON.parse(refusedFirst.body).error.code).toBe("forbidden");
  });

  it("stays on every page of a walk: the next page's link keeps it, and its cursor takes it", async () => {
    const records = Array.from({ length: 101 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * SECOND), { id: `record-${i}` }),
    );
    const { get } = await startService({ now: NOW, tables: { edge_logs: records } });
    const first = await get(`${ENDPOINTS[0][1]}&time_format=epoch_ms`);
    const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1] as string;
    expect(next).toContain("time_format=epoch_ms");
    const second = await get(next);
    expect(second.statusCode, second.body).toBe(200);
    expect(JSON.parse(second.body).result).toEqual([
      expect.objectContaining({
        id: "record-100",
        timestamp: Date.parse(shift(NOW, -101n * SECOND)),
      }),
    ]);
  });

  it("rewrites each follow record, and each watched value as GET answers it", async () => {
    const { app } = await startService({
      now: NOW,
      tables: TABLES,
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
      cache: {},
    });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const start = encodeURIComponent(shift(NOW, -5n * MINUTE));
    const follow = await open(
      `${base}/api/endpoints/logs.all/follow?${QUERY}&iso_timestamp_start=${start}&time_format=epoch_ms`,
    );
    await follow.until(() => records(follow).length === 1);
    expect(records(follow)[0]).toMatchObject({
      id: "three-minutes-ago",
      timestamp: Date.parse(shift(NOW, -3n * MINUTE)),
    });
    follow.close();

    // epoch_ms: a TIMESTAMP in RFC 3339 is written as it always is, which would not tell.
    const stats = `project=${PROJECT}&interval=1hr&time_format=epoch_ms`;
    const watch = await open(`${base}/api/endpoints/functions.invocation-stats/watch?${stats}`);
    await watch.until(() => watch.events.some((event) => event.event === "result"));
    const value = watch.events.find((event) => event.event === "result");
    const watched = JSON.parse(value?.data ?? "{}") as { result: Row[] };
    expect(watched.result.length).toBeGreaterThan(0);
    for (const row of watched.result) expect(row.timestamp).toEqual(expect.any(Number));
    const get = await app.inject({
      url: `/api/endpoints/functions.invocation-stats?${stats}`,
      headers: { "x-api-key": API_KEY },
    });
    expect(value?.data).toBe(get.body);
    watch.close();
  });

  it("is listed with each endpoint's time columns, and documented on every path of its rows", async () => {
    const { get } = await startService({ now: NOW, tables: TABLES });
    const listing = JSON.parse((await get("/api/endpoints")).body).result as {
      name: string;
      time_columns: string[];
    }[];
    expect(Object.fromEntries(listing.map((entry) => [entry.name, entry.time_columns]))).toEqual({
      "functions.invocation-stats": ["timestamp"],
      "logs.all": ["timestamp"],
      "usage.api-counts": ["timestamp"],
    });
    const document = JSON.parse((await get("/openapi.json")).body) as {
      paths: Record<string, { get: { parameters?: { name: string; schema: unknown }[] } }>;
    };
    const endpointPaths = Object.entries(document.paths).filter(
      ([path]) => path.startsWith("/api/endpoints/") && !path.endsWith("/grafana"),
    );
    expect(endpointPaths.length).toBeGreaterThan(10);
    for (const [path, { get: operation }] of endpointPaths) {
      const parameter = operation.parameters?.find(({ name }) => name === "time_format");
      expect(parameter?.schema, path).toMatchObject({
        enum: ["epoch_ms", "rfc3339"],
        "x-time-columns": ["timestamp"],
      });
    }
  });
});
