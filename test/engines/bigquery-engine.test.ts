// The BigQuery engine through the official client, over real HTTP to the local stand-in, which runs
// the SQL on GoogleSQL's reference engine. Expected rows come from the reference engine directly.
import { JWT } from "google-auth-library";
import { afterEach, beforeEach, describe, expect, inject, it, vi } from "vitest";
import {
  type BigQueryEngineOptions,
  createBigQueryEngine,
  type RetryPolicy,
} from "../../src/engines/bigquery.ts";
import { EngineError, type QueryRequest, ResultGoneError } from "../../src/engines/engine.ts";
import {
  type BigQueryStandIn,
  type StandInFault,
  startBigQueryStandIn,
} from "../support/bigquery-standin.ts";
import { endpointNamed } from "../support/catalog.ts";
import {
  DAY,
  edgeLog,
  edgeMetadata,
  edgeRequests,
  functionCall,
  functionLog,
  invocation,
  MINUTE,
  OTHER_PROJECT,
  PROJECT,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import { freePort } from "../support/free-port.ts";
import type { Row } from "../support/googlesql.ts";
import { bigQuerySql, windowed } from "../support/queries.ts";
import { referenceEngine } from "../support/reference-engine.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const FAST_RETRY: RetryPolicy = { attempts: 3, initialDelayMs: 1, maxDelayMs: 2 };

const TABLES: Record<string, Row[]> = {
  function_edge_logs: [
    functionCall(shift(NOW, -3n * MINUTE), { ms: 12.5 }),
    functionCall(shift(NOW, -3n * MINUTE + 7n), { ms: 40, statuses: [500] }),
    functionLog(shift(NOW, -10n * MINUTE), invocation({ ms: 3 }), invocation({ ms: 5.25 })),
    functionCall(shift(NOW, -10n * MINUTE), { project: OTHER_PROJECT }),
  ],
  edge_logs: [
    edgeLog(shift(NOW, -5n * SECOND)),
    edgeRequests(shift(NOW, -20n * MINUTE), request("/auth/v1/token"), request("/storage/v1/x")),
    edgeLog(shift(NOW, -30n * MINUTE + 1n), {
      metadata: [edgeMetadata(request("/realtime/v1/ws")), edgeMetadata()],
    }),
    edgeLog(shift(NOW, -40n * MINUTE), { project: OTHER_PROJECT }),
  ],
};

const ENDPOINT_PARAMS: Record<string, Record<string, string | null>> = {
  "functions.invocation-stats": { interval: "1hr", project: PROJECT, function_id: null },
  "logs.all": {
    project: PROJECT,
    project_tier: null,
    iso_timestamp_start: shift(NOW, -45n * MINUTE),
    iso_timestamp_end: null,
    status: null,
    method: null,
    path: null,
    search: null,
    search_regex: null,
    cursor_timestamp: null,
    cursor_id: null,
  },
  "usage.api-counts": { interval: "hourly", project: PROJECT },
};

const googleSqlPort = inject("googleSqlPort");
const reference = referenceEngine();
let standIn: BigQueryStandIn;

beforeEach(async () => {
  standIn = await startBigQueryStandIn({ googleSqlPort, tables: TABLES, now: NOW });
});
afterEach(() => standIn.close());

function engine(options: Partial<BigQueryEngineOptions> = {}) {
  return createBigQueryEngine({
    projectId: "test-project",
    dataset: "logs",
    location: "EU",
    apiEndpoint: standIn.url,
    now: standIn.clock,
    jobTimeoutMs: 10_000,
    maximumBytesBilled: "1000000000",
    retry: FAST_RETRY,
    ...options,
  });
}

function adHoc(sql: string, maxRows = 1000): QueryRequest {
  return { endpoint: "ad-hoc", sql, params: {}, maxRows };
}

async function rejection(promise: Promise<unknown>): Promise<EngineError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EngineError);
  return error as EngineError;
}

describe("endpoint queries", () => {
  it.each(Object.entries(ENDPOINT_PARAMS))(
    "%s gives the reference engine's rows",
    async (name, params) => {
      const sql = bigQuerySql(name);
      const expected = await reference.query(sql, {
        tables: TABLES,
        params: windowed(name, params, NOW),
        now: NOW,
      });
      expect(expected.rows.length).toBeGreaterThan(0);

      const { window } = endpointNamed(name);
      const result = await engine().run({ endpoint: name, sql, window, params, maxRows: 1000 });

      // Byte-identical JSON: same values, same column order.
      expect(JSON.stringify(result.rows)).toBe(JSON.stringify(expected.rows));
      expect(result.truncated).toBe(false);
      expect(result.queryId).toBe(standIn.queryCalls[0]?.queryId);
      expect(result.jobId).toBeUndefined();
      expect(result.bytesProcessed).toBeGreaterThan(0);
    },
  );

  it("returns logs.all's nested metadata as arrays of objects and µs timestamps", async () => {
    const params = ENDPOINT_PARAMS["logs.all"] as Record<string, string | null>;
    const result = await engine().run({
      endpoint: "logs.all",
      sql: bigQuerySql("logs.all"),
      window: endpointNamed("logs.all").window,
      params,
      maxRows: 1000,
    });
    expect(result.rows.map((r) => r.timestamp)).toEqual([
      "2026-11-21T05:17:37.123456Z",
      "2026-11-21T04:57:42.123456Z",
      "2026-11-21T04:47:42.123457Z",
    ]);
    expect(result.rows[1]?.metadata).toEqual([
      {
        request: [request("/auth/v1/token") as Row, request("/storage/v1/x") as Row],
        response: [{ status_code: 200 }],
      },
    ]);
  });
});

describe("wire format", () => {
  it("writes each BigQuery type as docs/api.md says, in the query's column order", async () => {
    const result = await engine().run(
      adHoc(`SELECT
        TIMESTAMP '2026-11-21 05:00:00+00' AS ts,
        TIMESTAMP '1969-12-31 23:59:58.5+00' AS early,
        DATETIME '2026-11-21 05:00:00' AS dt,
        DATETIME '2026-11-21 05:00:00.25' AS dt_fraction,
        9007199254740991 AS big,
        -3 AS negative,
        1.5 AS f,
        1e-7 AS tiny,
        'héllo "x"' AS s,
        CAST(NULL AS STRING) AS nothing,
        CAST(NULL AS TIMESTAMP) AS no_ts,
        TRUE AS yes,
        [STRUCT(1 AS a, [STRUCT('x' AS b)] AS inner_rows)] AS records,
        ARRAY<STRUCT<a INT64>>[] AS no_records,
        STRUCT(2.5 AS q, CAST(NULL AS INT64) AS r) AS record,
        [1, 2] AS ints`),
    );
    expect(JSON.stringify(result.rows)).toBe(
      JSON.stringify([
        {
          ts: "2026-11-21T05:00:00.000000Z",
          early: "1969-12-31T23:59:58.500000Z",
          dt: "2026-11-21T05:00:00",
          dt_fraction: "2026-11-21T05:00:00.250000",
          big: 9007199254740991,
          negative: -3,
          f: 1.5,
          tiny: 1e-7,
          s: 'héllo "x"',
          nothing: null,
          no_ts: null,
          yes: true,
          records: [{ a: 1, inner_rows: [{ b: "x" }] }],
          no_records: [],
          record: { q: 2.5, r: null },
          ints: [1, 2],
        },
      ]),
    );
  });
});

describe("what the client sends", () => {
  it("binds every parameter as STRING, null included, with labels, dataset, location and limits", async () => {
    await engine({ jobTimeoutMs: 20_000 }).run({
      endpoint: "logs.all",
      sql: bigQuerySql("logs.all"),
      window: endpointNamed("logs.all").window,
      params: {
        project: PROJECT,
        project_tier: null,
        iso_timestamp_start: null,
        iso_timestamp_end: "",
        status: "5xx",
        method: null,
        path: null,
        search: null,
        search_regex: null,
        cursor_timestamp: null,
        cursor_id: null,
      },
      maxRows: 1000,
    });

    const [call] = standIn.queryCalls;
    const query = call?.body;
    expect(query?.parameterMode).toBe("NAMED");
    expect(query?.queryParameters).toEqual([
      { name: "project", parameterType: { type: "STRING" }, parameterValue: { value: PROJECT } },
      { name: "project_tier", parameterType: { type: "STRING" }, parameterValue: { value: null } },
      {
        name: "iso_timestamp_start",
        parameterType: { type: "STRING" },
        parameterValue: { value: null },
      },
      {
        name: "iso_timestamp_end",
        parameterType: { type: "STRING" },
        parameterValue: { value: "" },
      },
      { name: "status", parameterType: { type: "STRING" }, parameterValue: { value: "5xx" } },
      ...["method", "path", "search", "search_regex"].map((name) => ({
        name,
        parameterType: { type: "STRING" },
        parameterValue: { value: null },
      })),
      {
        name: "cursor_timestamp",
        parameterType: { type: "STRING" },
        parameterValue: { value: null },
      },
      { name: "cursor_id", parameterType: { type: "STRING" }, parameterValue: { value: null } },
      // The window, from the engine's one reading of now: a day back (no tier), no end.
      {
        name: "window_start",
        parameterType: { type: "STRING" },
        parameterValue: { value: "2026-11-20T05:17:42.123456Z" },
      },
      {
        name: "window_end",
        parameterType: { type: "STRING" },
        parameterValue: { value: "9999-12-31T23:59:59.999999Z" },
      },
    ]);
    expect(query?.useLegacySql).toBe(false);
    expect(query?.defaultDataset).toEqual({ projectId: "test-project", datasetId: "logs" });
    expect(query?.maximumBytesBilled).toBe("1000000000");
    expect(query?.labels).toEqual({ endpoint: "logs_all" });
    expect(query?.location).toBe("EU");
    expect(query?.jobCreationMode).toBe("JOB_CREATION_OPTIONAL");
    const jobTimeoutMs = Number(query?.jobTimeoutMs);
    expect(jobTimeoutMs).toBeGreaterThan(0);
    expect(jobTimeoutMs).toBeLessThanOrEqual(20_000);
    expect(query?.maxResults).toBe(1000);
    expect(query?.formatOptions).toEqual({ useInt64Timestamp: true });
    // One round trip: the answer came in jobs.query's reply, with no job to poll.
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /bigquery/v2/projects/test-project/queries",
    ]);
    expect(standIn.requests.every((r) => r.headers.authorization === undefined)).toBe(true);
  });

  it("leaves maximumBytesBilled and location out when not configured", async () => {
    await engine({ maximumBytesBilled: undefined, location: undefined }).run(
      adHoc("SELECT 1 AS one"),
    );
    const [call] = standIn.queryCalls;
    expect(call?.body).not.toHaveProperty("maximumBytesBilled");
    expect(call?.body).not.toHaveProperty("location");
  });

  it("pings with SELECT 1 under the label ping", async () => {
    await engine().ping();
    expect(standIn.queryCalls.map((call) => [call.body.query, call.body.labels])).toEqual([
      ["SELECT 1", { endpoint: "ping" }],
    ]);
  });
});

describe("bytes processed", () => {
  // A week of records, three a day, each day its own UTC partition.
  const week = Array.from({ length: 21 }, (_, i) =>
    edgeLog(shift(NOW, -BigInt(Math.floor(i / 3)) * DAY - BigInt(i % 3) * MINUTE)),
  );
  const bytes = async (condition: string, params: Record<string, string>) => {
    standIn.tables = { edge_logs: week };
    const sql = `SELECT COUNT(*) AS n FROM edge_logs AS t WHERE t.project = @project AND ${condition}`;
    const run = { ...adHoc(sql), params: { project: PROJECT, ...params } };
    return (await engine().run(run)).bytesProcessed ?? fail();
  };
  const pruned =
    "t.timestamp > CAST(@start AS TIMESTAMP) AND t.timestamp <= CAST(@end AS TIMESTAMP)";

  it("are the bytes of the days between the bounds a query binds in prunable form", async () => {
    const today = await bytes(pruned, { start: "2026-11-21T00:00:00Z", end: NOW });
    const sevenDays = await bytes(pruned, { start: shift(NOW, -7n * DAY), end: NOW });
    expect(sevenDays / today).toBeGreaterThan(6.5);
    expect(sevenDays / today).toBeLessThan(7.5);
  });

  it("are the whole table's for a bound BigQuery cannot prune by", async () => {
    const whole = await bytes("TRUE", {});
    const wrapped = "IFNULL(t.timestamp > CAST(NULLIF(@start, '') AS TIMESTAMP), TRUE)";
    expect(await bytes(wrapped, { start: "2026-11-21T00:00:00Z" })).toBe(whole);
    const either = `(${pruned} OR t.id = @start)`;
    expect(await bytes(either, { start: "2026-11-21T00:00:00Z", end: NOW })).toBe(whole);
    expect(whole).toBe(week.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)), 0));
  });

  it("are none for a later page of a kept result, which is read, not queried", async () => {
    standIn.tables = { edge_logs: week };
    const sql = "SELECT t.id FROM edge_logs AS t WHERE t.project = @project ORDER BY t.id";
    const first = await engine().run({
      ...adHoc(sql, 5),
      params: { project: PROJECT },
      keepResult: true,
    });
    expect(first.bytesProcessed).toBeGreaterThan(0);
    const { jobId, pageToken } = first.rest ?? fail();
    const read = await fetch(
      `${standIn.url}/bigquery/v2/projects/test-project/queries/${jobId}?pageToken=${pageToken}`,
    );
    expect(((await read.json()) as { totalBytesProcessed: string }).totalBytesProcessed).toBe("0");
  });
});

describe("result size", () => {
  it("returns maxRows rows, flags truncation and fetches no second page", async () => {
    const result = await engine().run(
      adHoc("SELECT x FROM UNNEST(GENERATE_ARRAY(1, 1500)) AS x ORDER BY x", 1000),
    );
    expect(result.rows).toHaveLength(1000);
    expect(result.rows.at(-1)).toEqual({ x: 1000 });
    expect(result.truncated).toBe(true);
    expect(standIn.requests).toHaveLength(1);
  });

  it("reads the first page of a result BigQuery kept in a job, and no other", async () => {
    await standIn.close();
    standIn = await startBigQueryStandIn({ googleSqlPort, now: NOW, maxRowsWithoutJob: 10 });
    const result = await engine().run(
      adHoc("SELECT x FROM UNNEST(GENERATE_ARRAY(1, 15)) AS x ORDER BY x", 12),
    );
    expect(result.rows).toHaveLength(12);
    expect(result.truncated).toBe(true);
    expect(result.jobId).toBe(standIn.queryCalls[0]?.jobId);
    expect(result.jobId).toBeDefined();
    expect(standIn.requests).toHaveLength(1);
  });

  it("does not flag a result of exactly maxRows rows", async () => {
    const result = await engine().run(
      adHoc("SELECT x FROM UNNEST(GENERATE_ARRAY(1, 1000)) AS x", 1000),
    );
    expect(result.rows).toHaveLength(1000);
    expect(result.truncated).toBe(false);
  });
});

describe("a kept result", () => {
  const numbers = (count: number) =>
    adHoc(`SELECT x FROM UNNEST(GENERATE_ARRAY(1, ${count})) AS x ORDER BY x`, 10);
  const xs = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => ({ x: from + i }));

  it("is read page by page from the one job, no query run again and no bytes charged", async () => {
    const bigQuery = engine();
    const first = await bigQuery.run({ ...numbers(25), keepResult: true });
    expect(first.rows).toEqual(xs(1, 10));
    expect(first.rest?.jobId).toBe(standIn.queryCalls[0]?.jobId);

    const second = await bigQuery.readPage?.(first.rest ?? fail(), numbers(25));
    expect(second?.rows).toEqual(xs(11, 20));
    const last = await bigQuery.readPage?.(second?.rest ?? fail(), numbers(25));
    expect(last).toEqual({ rows: xs(21, 25), truncated: false, jobId: first.rest?.jobId });
    expect(standIn.queryCalls).toHaveLength(1);
    expect(standIn.pageReads).toHaveLength(2);
  });

  it("is not kept for a query that did not ask, nor when one page holds it", async () => {
    expect((await engine().run(numbers(25))).rest).toBeUndefined();
    expect((await engine().run({ ...numbers(10), keepResult: true })).rest).toBeUndefined();
  });

  it("gone from BigQuery is ResultGoneError, not retried", async () => {
    const bigQuery = engine();
    const first = await bigQuery.run({ ...numbers(25), keepResult: true });
    standIn.expireJobs();
    await expect(bigQuery.readPage?.(first.rest ?? fail(), numbers(25))).rejects.toBeInstanceOf(
      ResultGoneError,
    );
    expect(standIn.pageReads).toHaveLength(1);
  });
});

function fail(): never {
  throw new Error("expected a kept result");
}

describe("an unfinished job", () => {
  it("is polled until it completes", async () => {
    standIn.injectFault({ kind: "slowJob", polls: 3 });
    const result = await engine().run(adHoc("SELECT 'done' AS state"));
    expect(result.rows).toEqual([{ state: "done" }]);
    expect(standIn.resultCalls).toHaveLength(4);
    expect(standIn.queryCalls).toHaveLength(1);
    expect(result.jobId).toBe(standIn.queryCalls[0]?.jobId);
  });

  it("that outlives the job timeout is engine_timeout", async () => {
    standIn.injectFault({ kind: "slowJob", polls: Number.POSITIVE_INFINITY });
    const error = await rejection(engine({ jobTimeoutMs: 300 }).run(adHoc("SELECT 1 AS one")));
    const jobId = standIn.queryCalls[0]?.jobId as string;
    expect(error.code).toBe("engine_timeout");
    expect(error.message).not.toContain(jobId);
    expect(error.detail?.jobId).toBe(jobId);
    expect(Number(standIn.queryCalls[0]?.body.jobTimeoutMs)).toBeLessThanOrEqual(300);
  });

  it("is cancelled when nobody waits for it any more", async () => {
    standIn.injectFault({ kind: "slowJob", polls: Number.POSITIVE_INFINITY });
    const left = new AbortController();
    const running = engine().run({ ...adHoc("SELECT 1 AS one"), signal: left.signal });
    await vi.waitFor(() => expect(standIn.resultCalls.length).toBeGreaterThan(0));
    left.abort(new Error("the caller left"));
    await expect(running).rejects.toThrow();
    const jobId = standIn.queryCalls[0]?.jobId;
    await vi.waitFor(() => expect(standIn.cancelled).toEqual([jobId]));
  });
});

describe("a rejected query", () => {
  it.each<[string, StandInFault | undefined, string, string]>([
    ["an injected invalidQuery", { kind: "invalidQuery" }, "SELECT 1 AS one", "(injected)"],
    ["a real syntax error", undefined, "SELEC 1", "SELEC"],
    ["an injected notFound", { kind: "notFound" }, "SELECT 1 AS one", "standin:injected"],
    ["a missing table", undefined, "SELECT * FROM no_such_table", "no_such_table"],
  ])("%s is engine_error with a sanitised message, not retried", async (_, fault, sql, rawText) => {
    if (fault) standIn.injectFault(fault);
    const error = await rejection(engine().run(adHoc(sql)));

    expect(error.code).toBe("engine_error");
    expect(error.message).not.toContain(rawText);
    expect(error.detail).toMatchObject({ cause: expect.stringContaining(rawText) });
    expect(standIn.queryCalls).toHaveLength(1);
  });

  it("says which kind of failure it was", async () => {
    standIn.injectFault({ kind: "invalidQuery" });
    standIn.injectFault({ kind: "notFound" });
    const invalid = await rejection(engine().run(adHoc("SELECT 1")));
    const notFound = await rejection(engine().run(adHoc("SELECT 1")));
    expect(invalid.message).toMatch(/invalid/);
    expect(notFound.message).toMatch(/does not exist/);
  });
});

describe("a client that fails before BigQuery answers", () => {
  it("is engine_error naming the configuration, with the client's own text kept for the log", async () => {
    const error = await rejection(
      engine({ apiEndpoint: "http://[not-a-host" }).run(adHoc("SELECT 1")),
    );
    expect(error.code).toBe("engine_error");
    expect(error.message).toBe(
      "The service could not reach BigQuery with its configuration; see the service log.",
    );
    expect(error.detail?.cause).toMatch(/^client: .*Invalid URL/);
  });
});

describe("a failure's message", () => {
  it.each<[StandInFault, RegExp]>([
    [{ kind: "unauthenticated" }, /^BigQuery did not accept the service's credentials/],
    [{ kind: "accessDenied" }, /^The service's BigQuery credentials may not run/],
    [{ kind: "notFound" }, /does not exist in BigQuery/],
    [{ kind: "quotaExceeded" }, /^The service's BigQuery quota or rate limit is used up/],
    [{ kind: "rateLimitExceeded", times: 10 }, /^The service's BigQuery quota or rate limit/],
    [{ kind: "backendError", times: 10 }, /^BigQuery is temporarily unavailable/],
    [
      { kind: "connectionReset", times: 10 },
      /^The service could not reach BigQuery over the network/,
    ],
    [{ kind: "invalidQuery" }, /as invalid/],
  ])("names the cause of %o, not BigQuery's words", async (fault, message) => {
    standIn.injectFault(fault);
    const error = await rejection(engine().run(adHoc("SELECT 1 AS one")));
    expect(error.code).toBe("engine_error");
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(/injected|standin/);
    // BigQuery's own words go to the log only.
    expect(error.detail?.cause).toMatch(/^\w+: \S/);
  });

  it("names the network when nothing listens at BigQuery's address", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const error = await rejection(engine({ apiEndpoint: closed }).run(adHoc("SELECT 1")));
    expect(error.message).toMatch(/^The service could not reach BigQuery over the network/);
    expect(error.detail?.cause).toMatch(/^ECONNREFUSED: /);
  });

  it("names the credentials when the client cannot load any", async () => {
    const authClient = new JWT({
      keyFile: "/no/such/service-account.json",
      scopes: ["https://www.googleapis.com/auth/bigquery"],
    });
    const error = await rejection(engine({ authClient }).run(adHoc("SELECT 1")));
    expect(error.message).toMatch(/^BigQuery did not accept the service's credentials/);
    expect(error.detail?.cause).toContain("/no/such/service-account.json");
    expect(standIn.queryCalls).toHaveLength(0);
  });
});

describe("transient failures", () => {
  it.each<StandInFault["kind"]>(["rateLimitExceeded", "backendError", "connectionReset"])(
    "%s is retried as a new query and then succeeds",
    async (kind) => {
      standIn.injectFault({ kind, times: 2 } as StandInFault);
      const result = await engine().run(adHoc("SELECT 'ok' AS answer"));
      expect(result.rows).toEqual([{ answer: "ok" }]);
      expect(standIn.queryCalls).toHaveLength(3);
    },
  );

  it.each<StandInFault["kind"]>(["rateLimitExceeded", "backendError"])(
    "%s on every attempt is engine_error after the configured attempts",
    async (kind) => {
      standIn.injectFault({ kind, times: 10 } as StandInFault);
      const error = await rejection(engine().run(adHoc("SELECT 1 AS one")));
      expect(error.code).toBe("engine_error");
      expect(error.message).toMatch(/try again/);
      expect(error.message).not.toContain("injected");
      expect(error.detail?.cause).toContain(kind);
      expect(standIn.queryCalls).toHaveLength(FAST_RETRY.attempts);
    },
  );

  it("is not retried when the backoff would pass the job timeout", async () => {
    standIn.injectFault({ kind: "backendError", times: 10 });
    const slowRetry: RetryPolicy = { attempts: 3, initialDelayMs: 60_000, maxDelayMs: 60_000 };
    const error = await rejection(
      engine({ retry: slowRetry, jobTimeoutMs: 5_000 }).run(adHoc("SELECT 1 AS one")),
    );
    expect(error.code).toBe("engine_error");
    expect(standIn.queryCalls).toHaveLength(1);
  });
});
