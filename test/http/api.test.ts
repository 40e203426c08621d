// The service end to end: app.inject → the embedded engine, or where what BigQuery is sent or
// answers matters, → BigQuery engine → official client → HTTP → stand-in → GoogleSQL. Expected
// rows are worked out by hand from the fixtures below.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { type Logger, pino } from "pino";
import { describe, expect, it } from "vitest";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { createLogger } from "../../src/logger.ts";
import { withQuery } from "../support/catalog.ts";
import {
  DAY,
  edgeLog,
  edgeMetadata,
  edgeRequests,
  functionCall,
  MINUTE,
  micros,
  OTHER_PROJECT,
  PROJECT,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import {
  API_KEY,
  type BigQueryServiceOptions,
  startBigQueryService,
  startService,
} from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const STATS_ID = "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c";
const LOGS_ID = "c4e48f7a-e763-48a3-9217-93a065d845d8";
const USAGE_ID = "fa6e0509-d5f7-468e-b429-8c4aecf8563d";

const recent = edgeLog(shift(NOW, -5n * SECOND));
const older = edgeRequests(
  shift(NOW, -20n * MINUTE),
  request("/auth/v1/token"),
  request("/storage/v1/object/a"),
);
const TABLES = {
  function_edge_logs: [
    functionCall(shift(NOW, -3n * MINUTE), { ms: 10 }),
    functionCall(shift(NOW, -3n * MINUTE + 1n), { ms: 30, statuses: [500] }),
    functionCall(shift(NOW, -3n * MINUTE), { project: OTHER_PROJECT, ms: 99 }),
  ],
  edge_logs: [
    recent,
    older,
    edgeLog(shift(NOW, -30n * MINUTE), {
      project: OTHER_PROJECT,
      metadata: [edgeMetadata(request("/rest/v1/x", OTHER_PROJECT))],
    }),
  ],
};

const service = (options: Omit<Parameters<typeof startService>[0], "now"> = {}) =>
  startService({ tables: TABLES, now: NOW, ...options });
const bigQueryService = (options: Omit<BigQueryServiceOptions, "now"> = {}) =>
  startBigQueryService({ tables: TABLES, now: NOW, ...options });

const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

describe("the three endpoints", () => {
  const statsRows = [
    {
      timestamp: "2026-11-21T05:14:00.000000Z",
      min_execution_time: 10,
      max_execution_time: 30,
      avg_execution_time: 20,
      p95_execution_time: 10,
      p99_execution_time: 10,
      count: 2,
      error_count: 1,
    },
  ];
  const usageRows = [
    {
      timestamp: "2026-11-21T04:00:00",
      total_rest_requests: 0,
      total_storage_requests: 1,
      total_auth_requests: 1,
      total_realtime_requests: 0,
    },
    {
      timestamp: "2026-11-21T05:00:00",
      total_rest_requests: 1,
      total_storage_requests: 0,
      total_auth_requests: 0,
      total_realtime_requests: 0,
    },
  ];

  it.each([
    `/api/endpoints/functions.invocation-stats`,
    `/api/endpoints/query/${STATS_ID}`,
    `/api/endpoints/query/functions.invocation-stats`,
  ])("GET %s answers the project's invocation stats", async (path) => {
    const { get } = await service();
    const response = await get(`${path}?project=${PROJECT}&interval=1hr`);
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(json(response.body)).toEqual({ result: statsRows });
  });

  it.each([
    `/api/endpoints/usage.api-counts`,
    `/api/endpoints/query/${USAGE_ID}`,
    `/api/endpoints/query/usage.api-counts`,
  ])("GET %s answers the project's API counts", async (path) => {
    const { get } = await service();
    const response = await get(`${path}?project=${PROJECT}&interval=hourly`);
    expect(response.statusCode).toBe(200);
    expect(json(response.body)).toEqual({ result: usageRows });
  });

  it.each([
    `/api/endpoints/logs.all`,
    `/api/endpoints/query/${LOGS_ID}`,
    `/api/endpoints/query/logs.all`,
  ])("GET %s answers the project's newest records with their metadata", async (path) => {
    const { get } = await service();
    const response = await get(`${path}?project=${PROJECT}&project_tier=FREE`);
    expect(response.statusCode).toBe(200);
    expect(response.headers["cache-control"]).toBe("no-store");
    expect(json(response.body)).toEqual({
      result: [recent, older].map(({ id, timestamp, event_message, metadata }) => ({
        id,
        timestamp,
        event_message,
        metadata,
      })),
    });
  });

  it("binds every declared parameter as STRING, an absent one as null", async () => {
    const { get, standIn } = await bigQueryService();
    await get(
      `/api/endpoints/logs.all?project=${PROJECT}&project_tier=PRO&iso_timestamp_start=&status=5XX,404&method=get`,
    );
    const sent = standIn.queryCalls[0]?.body.queryParameters;
    const string = (name: string, value: string | null) => ({
      name,
      parameterType: { type: "STRING" },
      parameterValue: { value },
    });
    expect(sent).toEqual([
      string("project", PROJECT),
      string("project_tier", "PRO"),
      string("iso_timestamp_start", null),
      string("iso_timestamp_end", null),
      // Filters as the SQL takes them: status terms lower case, methods upper case.
      string("status", "5xx,404"),
      string("method", "GET"),
      string("path", null),
      string("search", null),
      string("search_regex", null),
      // No cursor: the position of the next page binds as two nulls.
      string("cursor_timestamp", null),
      string("cursor_id", null),
      // The window the SQL prunes by: PRO's 7 days back from now, and no end.
      string("window_start", shift(NOW, -7n * DAY)),
      string("window_end", "9999-12-31T23:59:59.999999Z"),
    ]);
  });

  it("binds since as the start it means, counted back from the service's clock", async () => {
    const { get, standIn } = await bigQueryService({ follow: { clock: () => micros(NOW) } });
    await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=PRO&since=90s`);
    const sent = standIn.queryCalls[0]?.body.queryParameters as {
      name: string;
      parameterValue: { value: unknown };
    }[];
    expect(sent.map((p) => p.name)).not.toContain("since");
    expect(sent.find((p) => p.name === "iso_timestamp_start")?.parameterValue.value).toBe(
      shift(NOW, -90n * SECOND),
    );
  });

  it("caps a result at 1000 rows and says so in X-Result-Truncated", async () => {
    const numbers =
      "SELECT x FROM UNNEST(GENERATE_ARRAY(1, 1500)) AS x WHERE @project != @interval";
    const { get } = await bigQueryService({
      catalog: withQuery("usage.api-counts", "bigquery", numbers),
    });
    const response = await get(`/api/endpoints/usage.api-counts?project=a&interval=daily`);
    expect(response.statusCode).toBe(200);
    expect(response.headers["x-result-truncated"]).toBe("true");
    expect((json(response.body).result as unknown[]).length).toBe(1000);
  });

  it("lists the catalog: names, ids, params with types and whether required, cache policy", async () => {
    const { get } = await service();
    const response = await get("/api/endpoints");
    expect(response.statusCode).toBe(200);
    const listed = json(response.body).result as Record<string, unknown>[];
    expect(listed.map((e) => [e.name, e.id])).toEqual([
      ["functions.invocation-stats", STATS_ID],
      ["logs.all", LOGS_ID],
      ["usage.api-counts", USAGE_ID],
    ]);
    expect(listed[2]).toMatchObject({
      example: "/api/endpoints/usage.api-counts?project=default&interval=hourly",
      max_rows: 1000,
      cache: { ttl_seconds: 900, warming_seconds: 300 },
      params: [
        { name: "project", type: "string", required: true },
        // Required unless a time range stands in for it.
        {
          name: "interval",
          type: "string",
          required: false,
          allowed: ["minutely", "hourly", "daily"],
        },
        ...["from", "to", "bucket", "max_points"].map((name) => ({
          name,
          type: "string",
          required: false,
        })),
      ],
      range: {
        instead_of: "interval",
        ladder: "1s 5s 10s 30s 1m 5m 15m 30m 1h 3h 6h 12h 1d 7d".split(" "),
        max_points: 300,
        max_range: "90d",
      },
    });
    expect(listed[1]?.cache).toBeNull();
    // A paged endpoint says how: what a client needs to page or follow it without knowing it.
    expect(listed[1]?.paging).toEqual({
      page_size: 100,
      order: ["timestamp DESC", "id DESC"],
      window: { start: "iso_timestamp_start", end: "iso_timestamp_end", since: "since" },
      follow: true,
    });
    expect(listed[0]).not.toHaveProperty("paging");
    expect(listed[1]).not.toHaveProperty("range");
  });
});

describe("authentication", () => {
  const path = `/api/endpoints/usage.api-counts?project=${PROJECT}&interval=hourly`;

  it("accepts the key as Authorization: Bearer", async () => {
    const { get } = await service();
    expect((await get(path, { authorization: `Bearer ${API_KEY}` })).statusCode).toBe(200);
  });

  it.each([
    [{}, "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key or token>."],
    [
      { "x-api-key": "" },
      "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key or token>.",
    ],
    [{ "x-api-key": `${API_KEY}x` }, "Invalid API key."],
    [
      { authorization: `Basic ${API_KEY}` },
      "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key or token>.",
    ],
    [{ authorization: "Bearer nope" }, "Invalid API key."],
  ])(
    "rejects %j with 401 unauthorized before looking at the endpoint",
    async (headers, message) => {
      const { app } = await service();
      for (const url of [path, "/api/endpoints/nope", "/api/endpoints"]) {
        const response = await app.inject({ method: "GET", url, headers });
        expect(response.statusCode).toBe(401);
        expect(json(response.body)).toEqual({ error: { code: "unauthorized", message } });
      }
    },
  );

  it("limits failed authentications per client address, so keys cannot be guessed at line rate", async () => {
    const { app } = await service({ config: { auth: { failuresPerMinute: 3 } } });
    const from = (remoteAddress: string, key: string) =>
      app.inject({ method: "GET", url: path, remoteAddress, headers: { "x-api-key": key } });
    for (let guess = 0; guess < 3; guess++) {
      expect((await from("203.0.113.7", `guess-${guess}-0123456789abcdef`)).statusCode).toBe(401);
    }
    // Once over, more guesses from that address wait for the window to end; the right key does not.
    const limited = await from("203.0.113.7", "guess-3-0123456789abcdef");
    expect(limited.statusCode).toBe(429);
    expect(json(limited.body)).toEqual({
      error: {
        code: "rate_limited",
        message: expect.stringMatching(
          /^Too many failed authentications from this address; retry in \d+ seconds\.$/,
        ),
      },
    });
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect((await from("203.0.113.7", API_KEY)).statusCode).toBe(200);
    expect((await from("203.0.113.8", "guess-4-0123456789abcdef")).statusCode).toBe(401);
  });

  it("serves /health and /ready without a key", async () => {
    const { app } = await service();
    expect(json((await app.inject("/health")).body)).toEqual({ status: "ok" });
    const ready = await app.inject("/ready");
    expect(ready.statusCode).toBe(200);
    expect(json(ready.body)).toEqual({ status: "ready", engine: "duckdb" });
  });
});

describe("errors", () => {
  it("answers bad params with 400 invalid_params and one detail per parameter, without an engine call", async () => {
    const { get, standIn } = await bigQueryService();
    const response = await get(
      "/api/endpoints/usage.api-counts?project=(&interval=weekly&projct=x",
    );
    expect(response.statusCode).toBe(400);
    expect(json(response.body)).toEqual({
      error: {
        code: "invalid_params",
        message: "Some query parameters are invalid; see details.",
        details: [
          {
            param: "project",
            message: expect.stringContaining("not a valid RE2 regular expression"),
          },
          { param: "interval", message: "must be one of minutely, hourly, daily" },
          {
            param: "projct",
            message:
              "unknown parameter; this endpoint takes project, interval, from, to, bucket, max_points",
          },
        ],
      },
    });
    expect(standIn.queryCalls).toEqual([]);
  });

  it("answers an unknown endpoint with 404 endpoint_not_found, and an unknown route with 404 not_found", async () => {
    const { get } = await service();
    const unknown = await get("/api/endpoints/query/00000000-0000-0000-0000-000000000000");
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown.body)).toMatchObject({ error: { code: "endpoint_not_found" } });
    const route = await get("/api/nothing-here");
    expect(route.statusCode).toBe(404);
    expect(json(route.body)).toMatchObject({ error: { code: "not_found" } });
  });

  it("answers URLs Fastify itself rejects in the same envelope, with a request id", async () => {
    const { get } = await service();
    const badEncoding = await get("/api/endpoints/%E0");
    expect(badEncoding.statusCode).toBe(400);
    expect(json(badEncoding.body)).toEqual({
      error: { code: "bad_request", message: "The URL is not validly percent-encoded." },
    });
    expect(badEncoding.headers["x-request-id"]).toEqual(expect.any(String));
    const tooLong = await get(`/api/endpoints/${"x".repeat(300)}`);
    expect(tooLong.statusCode).toBe(404);
    expect(json(tooLong.body)).toMatchObject({ error: { code: "endpoint_not_found" } });
  });

  it("answers a badly percent-encoded query string with 400 bad_request, without an engine call", async () => {
    const { get, standIn } = await bigQueryService();
    for (const query of ["project=%ZZ&interval=hourly", "project=%E0%A4&interval=hourly", "x=%"]) {
      const response = await get(`/api/endpoints/usage.api-counts?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(json(response.body), query).toEqual({
        error: { code: "bad_request", message: "The URL is not validly percent-encoded." },
      });
      expect(response.headers["access-control-allow-origin"]).toBe("*");
    }
    expect(standIn.queryCalls).toEqual([]);
    const encoded = await get(
      `/api/endpoints/usage.api-counts?project=%5Ea%2Bb%25&interval=hourly`,
    );
    expect(encoded.statusCode).toBe(200);
  });

  it("refuses any request that declares a body with 413 payload_too_large, closing the connection", async () => {
    const { app, standIn } = await bigQueryService();
    for (const [method, payload] of [
      ["POST", JSON.stringify({ padding: "x".repeat(5000) })],
      ["GET", JSON.stringify({ project: "other" })],
    ] as const) {
      const response = await app.inject({
        method,
        url: `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`,
        headers: { "x-api-key": API_KEY, "content-type": "application/json" },
        payload,
      });
      expect(response.statusCode, method).toBe(413);
      expect(response.headers.connection).toBe("close");
      expect(json(response.body)).toEqual({
        error: { code: "payload_too_large", message: expect.stringContaining("no request body") },
      });
    }
    expect(standIn.queryCalls).toEqual([]);
  });

  it("answers headers over Node's limit with 431 headers_too_large in the envelope", async () => {
    const { app } = await service();
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    const response = await fetch(`${address}/api/endpoints`, {
      headers: { "x-api-key": API_KEY, "x-padding": "x".repeat(20_000) },
    });
    expect(response.status).toBe(431);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(response.headers.get("x-request-id")).toEqual(expect.any(String));
    expect(await response.json()).toEqual({
      error: { code: "headers_too_large", message: expect.stringMatching(/exceed \d+ bytes/) },
    });
  });

  it("answers other methods on endpoint paths with 405 and Allow: GET, HEAD", async () => {
    const { app, standIn } = await bigQueryService();
    for (const method of ["POST", "PUT", "DELETE", "PATCH"] as const) {
      const response = await app.inject({
        method,
        url: `/api/endpoints/query/logs.all?project=${PROJECT}&project_tier=FREE`,
        headers: { "x-api-key": API_KEY },
      });
      expect(response.statusCode, method).toBe(405);
      expect(response.headers.allow, method).toBe("GET, HEAD");
      expect(json(response.body)).toMatchObject({ error: { code: "method_not_allowed" } });
    }
    expect(standIn.queryCalls).toEqual([]);
  });

  it("exposes Retry-After and the standard RateLimit-* headers to browsers", async () => {
    const { get } = await service({ config: { rateLimitPerMinute: 1 } });
    const path = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;
    const first = await get(path, { origin: "https://dashboard.example" });
    expect(first.headers).toMatchObject({ "ratelimit-limit": "1", "ratelimit-remaining": "0" });
    const limited = await get(path, { origin: "https://dashboard.example" });
    expect(limited.headers["retry-after"]).toEqual(expect.any(String));
    const exposed = String(limited.headers["access-control-expose-headers"]).split(", ");
    expect(exposed).toEqual(
      expect.arrayContaining([
        "Retry-After",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
      ]),
    );
  });

  it("advertises in its CORS preflight only the methods it serves", async () => {
    const { app } = await service();
    const preflight = await app.inject({
      method: "OPTIONS",
      url: "/api/endpoints/logs.all",
      headers: { origin: "https://dashboard.example", "access-control-request-method": "GET" },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-methods"]).toBe("GET, HEAD");
    // An OPTIONS that is no preflight is not answered with @fastify/cors's plain-text 400.
    const bare = await app.inject({ method: "OPTIONS", url: "/api/endpoints/logs.all" });
    expect(bare.statusCode).toBeLessThan(400);
  });

  it("rejects parameters on the catalog listing, which takes none", async () => {
    const { get } = await service();
    const response = await get("/api/endpoints?verbose=1");
    expect(response.statusCode).toBe(400);
    expect(json(response.body)).toMatchObject({
      error: {
        code: "invalid_params",
        details: [{ param: "verbose", message: "unknown parameter; this route takes none" }],
      },
    });
  });

  it("answers past the per-key limit with 429 rate_limited", async () => {
    const { get } = await service({ config: { rateLimitPerMinute: 2 } });
    const path = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;
    expect((await get(path)).statusCode).toBe(200);
    expect((await get(path)).statusCode).toBe(200);
    const limited = await get(path);
    expect(limited.statusCode).toBe(429);
    expect(json(limited.body)).toEqual({
      error: {
        code: "rate_limited",
        message: expect.stringMatching(
          /^More than 2 requests a minute with this credential; retry in /,
        ),
      },
    });
  });

  it("counts the limit per key: one key's traffic does not use up another's", async () => {
    const other = "other-key-0123456789abcdef";
    const { get } = await service({
      config: { rateLimitPerMinute: 1, auth: { apiKeys: [API_KEY, other] } },
    });
    const path = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;
    expect((await get(path)).statusCode).toBe(200);
    expect((await get(path)).statusCode).toBe(429);
    expect((await get(path, { authorization: `Bearer ${other}` })).statusCode).toBe(200);
  });

  it("counts by credential name, with a credential's own limit overriding the default", async () => {
    const secret = "a-token-secret-of-32-bytes-or-more";
    const { get } = await service({
      config: { rateLimitPerMinute: 100 },
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 600 }),
    });
    const token = (sub: string, limit?: number) =>
      new SignJWT({ scopes: [{ endpoint: "*" }], rate_limit_per_minute: limit })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject(sub)
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(secret));
    const path = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;
    const as = async (credential: string) =>
      (await get(path, { authorization: `Bearer ${credential}` })).statusCode;
    expect(await as(await token("dashboard", 2))).toBe(200);
    // Another token with the same name spends the same budget.
    expect(await as(await token("dashboard", 2))).toBe(200);
    expect(await as(await token("dashboard", 2))).toBe(429);
    expect(await as(await token("ops"))).toBe(200);
  });

  it("answers an engine failure with 502 engine_error, without engine text", async () => {
    const { get, standIn } = await bigQueryService();
    standIn.injectFault({ kind: "invalidQuery" });
    const response = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`);
    expect(response.statusCode).toBe(502);
    const body = json(response.body) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("engine_error");
    expect(response.body).not.toContain("injected");
    expect(Object.keys(body.error)).toEqual(["code", "message"]);
  });

  it("answers a job that outlives the timeout with 504 engine_timeout", async () => {
    const { get, standIn } = await bigQueryService({ engine: { jobTimeoutMs: 300 } });
    standIn.injectFault({ kind: "slowJob", polls: Number.POSITIVE_INFINITY });
    const response = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`);
    expect(response.statusCode).toBe(504);
    expect(json(response.body)).toMatchObject({ error: { code: "engine_timeout" } });
  });

  it("answers a bug with 500 internal_error: a request id, no stack, no internals", async () => {
    const crashing = (engine: QueryEngine): QueryEngine => ({
      ...engine,
      run: async () => {
        throw new TypeError("secret internals at crash.ts:1");
      },
    });
    const { get } = await service({ wrapEngine: crashing });
    const response = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`);
    expect(response.statusCode).toBe(500);
    expect(json(response.body)).toEqual({
      error: {
        code: "internal_error",
        message: `An internal error occurred; quote request id ${response.headers["x-request-id"]} when reporting it.`,
      },
    });
  });

  it("answers a burst of readiness probes with one engine check", async () => {
    let pings = 0;
    const counting = (engine: QueryEngine): QueryEngine => ({
      ...engine,
      ping: () => {
        pings += 1;
        return engine.ping();
      },
    });
    const { app } = await service({ wrapEngine: counting });
    const answers = await Promise.all([1, 2, 3].map(() => app.inject("/ready")));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
    expect(pings).toBe(1);
  });

  it("reports not ready with 503 when the engine cannot answer", async () => {
    const { app, standIn } = await bigQueryService();
    standIn.injectFault({ kind: "invalidQuery" });
    const response = await app.inject("/ready");
    expect(response.statusCode).toBe(503);
    expect(json(response.body)).toMatchObject({ error: { code: "not_ready" } });
  });
});

describe("request log", () => {
  it("writes one line per request with id, endpoint, status, duration, rows, job and bytes; never a key", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const { get, standIn } = await bigQueryService({ logger });
    const ok = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`, {
      "x-request-id": "trace-42",
    });
    await get("/api/endpoints/logs.all", { "x-api-key": "wrong-key-that-must-not-leak" });

    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = records.filter((r) => r.msg === "request");
    expect(requests).toHaveLength(2);
    expect(ok.headers["x-request-id"]).toBe("trace-42");
    expect(requests[0]).toMatchObject({
      reqId: "trace-42",
      method: "GET",
      path: "/api/endpoints/logs.all",
      params: ["project", "project_tier"],
      endpoint: "logs.all",
      status: 200,
      durationMs: expect.any(Number),
      rows: 2,
      queryId: standIn.queryCalls[0]?.queryId,
      bytesProcessed: expect.any(Number),
    });
    expect(requests[1]).toMatchObject({ status: 401 });
    const output = lines.join("");
    expect(output).not.toContain(API_KEY);
    expect(output).not.toContain("wrong-key-that-must-not-leak");
  });

  // The line goes out as a string to any pino stream, and as bytes to the service's own destination.
  const destinations: [string, () => { logger: Logger; lines: () => string[] }][] = [
    [
      "a pino stream",
      () => {
        const lines: string[] = [];
        const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
        return { logger, lines: () => lines };
      },
    ],
    [
      "the service's destination",
      () => {
        const file = join(mkdtempSync(join(tmpdir(), "request-line-")), "service.log");
        const logger = createLogger({ logLevel: "info", logFormat: "json" }, file);
        return {
          logger,
          lines: () => {
            logger.flush();
            return readFileSync(file, "utf8").trimEnd().split("\n");
          },
        };
      },
    ],
  ];

  it.each(destinations)(
    "writes a request line that stays valid JSON whatever the names in its query string, to %s",
    async (_, destination) => {
      const { logger, lines } = destination();
      const { get } = await service({ logger });
      const names = ['pro"ject', "back\\slash", "tab\t", "é€😀"];
      const query = names.map((name) => `${encodeURIComponent(name)}=1`).join("&");
      const response = await get(`/api/endpoints/logs.all?${query}`);
      expect(response.statusCode).toBe(400);

      const [line] = lines()
        .map((text) => JSON.parse(text))
        .filter((record) => record.msg === "request");
      expect(line).toMatchObject({
        level: 30,
        time: expect.any(Number),
        pid: process.pid,
        reqId: response.headers["x-request-id"],
        method: "GET",
        path: "/api/endpoints/logs.all",
        params: names,
        status: 400,
        credential: expect.any(String),
        endpoint: "logs.all",
      });
    },
  );

  it("logs a failed query's engine message, which the response leaves out", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const { get, standIn } = await bigQueryService({ logger });
    standIn.injectFault({ kind: "invalidQuery" });
    const response = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`);

    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(
      expect.objectContaining({ msg: "request", status: 502, endpoint: "logs.all" }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({
        level: 50,
        reqId: response.headers["x-request-id"],
        code: "engine_error",
        cause: expect.stringContaining("invalidQuery"),
      }),
    );
    expect(response.body).not.toContain("invalidQuery");
  });

  it("logs the job id of a query BigQuery made a job of, which the response leaves out", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const { get, standIn } = await bigQueryService({ logger, engine: { jobTimeoutMs: 300 } });
    standIn.injectFault({ kind: "slowJob", polls: Number.POSITIVE_INFINITY });
    const response = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`);
    const jobId = standIn.queryCalls[0]?.jobId as string;

    expect(response.statusCode).toBe(504);
    expect(response.body).not.toContain(jobId);
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(
      expect.objectContaining({ msg: "request", status: 504, endpoint: "logs.all", jobId }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({ level: 50, code: "engine_timeout", jobId }),
    );
  });
});
