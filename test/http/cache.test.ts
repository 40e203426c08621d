// The result cache as HTTP clients see it, through the whole service (app → embedded engine; where
// an engine failure or a refresh's job matters, app → BigQuery client → stand-in).
//
// Time: the cache reads its clock from the `cache.now` option, a variable the tests move, so Age and
// expiry never depend on the wall clock. Only the warming tests fake timers, and only setTimeout and
// clearTimeout: the cache arms its refresh with setTimeout, while the stand-in, the BigQuery client's
// sockets, its AbortSignal deadline and its retry sleeps (node:timers/promises) keep real time, so the
// HTTP round trips a refresh makes still run.
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cachedBigQueryService, cachedService } from "../support/cached-service.ts";
import { edgeLog, functionCall, MINUTE, PROJECT, shift } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECOND_MS = 1000;
const TTL_SECONDS = 900;
const WARMING_SECONDS = 300;

const USAGE_ID = "fa6e0509-d5f7-468e-b429-8c4aecf8563d";
const USAGE_QUERY = `project=${encodeURIComponent(`^https://${PROJECT}\\.`)}&interval=hourly`;
const USAGE = `/api/endpoints/usage.api-counts?${USAGE_QUERY}`;
const STATS = `/api/endpoints/functions.invocation-stats?project=${PROJECT}&interval=1hr`;
const LOGS = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=PRO`;

const TABLES: Record<string, Row[]> = {
  edge_logs: [edgeLog(shift(NOW, -5n * MINUTE)), edgeLog(shift(NOW, -20n * MINUTE))],
  function_edge_logs: [functionCall(shift(NOW, -3n * MINUTE))],
};

afterEach(() => {
  vi.useRealTimers();
});

describe("cache headers", () => {
  it("answers MISS, then HIT with the same ETag and body, without a second query", async () => {
    const { service, engine } = await cachedService(NOW, TABLES);
    const miss = await service.get(STATS);
    const hit = await service.get(STATS);

    expect(miss.statusCode).toBe(200);
    expect(miss.headers["x-cache"]).toBe("MISS");
    expect(miss.headers.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(JSON.parse(miss.body).result).toHaveLength(1);
    expect(hit.statusCode).toBe(200);
    expect(hit.headers["x-cache"]).toBe("HIT");
    expect(hit.headers.etag).toBe(miss.headers.etag);
    expect(hit.body).toBe(miss.body);
    expect(hit.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(engine.runs).toBe(1);
  });

  it("sends Age as the value's age and max-age as the whole TTL, so a client's freshness is TTL − Age", async () => {
    const { service, clock } = await cachedService(NOW, TABLES);
    const miss = await service.get(USAGE);
    expect(miss.headers.age).toBe("0");
    expect(miss.headers["cache-control"]).toBe(`private, max-age=${TTL_SECONDS}`);

    clock.ms += 100 * SECOND_MS;
    const hit = await service.get(USAGE);
    expect(hit.headers["x-cache"]).toBe("HIT");
    expect(hit.headers.age).toBe("100");
    expect(hit.headers["cache-control"]).toBe(`private, max-age=${TTL_SECONDS}`);
  });
});

describe("conditional requests", () => {
  it("answers If-None-Match with the current ETag by a 304 without a body", async () => {
    const { service, engine } = await cachedService(NOW, TABLES);
    const { etag } = (await service.get(USAGE)).headers as { etag: string };

    for (const ifNoneMatch of [etag, `W/${etag}`, `"something-else", ${etag}`]) {
      const notModified = await service.get(USAGE, { "if-none-match": ifNoneMatch });
      expect(notModified.statusCode, ifNoneMatch).toBe(304);
      expect(notModified.body, ifNoneMatch).toBe("");
      expect(notModified.headers.etag).toBe(etag);
      expect(notModified.headers["x-cache"]).toBe("HIT");
      // Nothing that describes a body (RFC 9110 §15.4.5).
      const described = Object.keys(notModified.headers).filter((name) =>
        name.startsWith("content-"),
      );
      expect(described, ifNoneMatch).toEqual([]);
    }
    expect(engine.runs).toBe(1);
  });

  it("answers an If-None-Match with another ETag by a 200 with the body", async () => {
    const { service } = await cachedService(NOW, TABLES);
    const first = await service.get(USAGE);
    const other = await service.get(USAGE, { "if-none-match": '"not-the-current-etag"' });
    expect(other.statusCode).toBe(200);
    expect(other.body).toBe(first.body);
  });
});

describe("one entry per endpoint and parameters", () => {
  it("shares the entry between the name, UUID and /query/<name> routes and any parameter order", async () => {
    const { service, engine } = await cachedService(NOW, TABLES);
    const reordered = `interval=hourly&${USAGE_QUERY.split("&")[0]}`;
    const answers = [];
    for (const url of [
      USAGE,
      `/api/endpoints/query/${USAGE_ID}?${USAGE_QUERY}`,
      `/api/endpoints/query/${USAGE_ID.toUpperCase()}?${reordered}`,
      `/api/endpoints/query/usage.api-counts?${reordered}`,
    ]) {
      answers.push(await service.get(url));
    }

    expect(answers.map((answer) => answer.headers["x-cache"])).toEqual([
      "MISS",
      "HIT",
      "HIT",
      "HIT",
    ]);
    expect(new Set(answers.map((answer) => answer.headers.etag)).size).toBe(1);
    expect(engine.runs).toBe(1);
  });

  it("keeps different parameters apart", async () => {
    const { service, engine } = await cachedService(NOW, TABLES);
    await service.get(USAGE);
    const daily = await service.get(USAGE.replace("interval=hourly", "interval=daily"));
    expect(daily.headers["x-cache"]).toBe("MISS");
    expect(engine.runs).toBe(2);
  });

  it("sends concurrent identical requests to the engine once", async () => {
    const { service, engine } = await cachedService(NOW, TABLES);
    const answers = await Promise.all(Array.from({ length: 20 }, () => service.get(STATS)));

    expect(engine.runs).toBe(1);
    for (const answer of answers) {
      expect(answer.statusCode).toBe(200);
      expect(answer.headers["x-cache"]).toBe("MISS");
      expect(answer.body).toBe(answers[0]?.body);
    }
  });
});

describe("what is not cached", () => {
  it("runs logs.all on every request and tells clients not to store it", async () => {
    const { service, engine } = await cachedService(NOW, TABLES);
    for (let i = 0; i < 2; i++) {
      const answer = await service.get(LOGS);
      expect(answer.statusCode).toBe(200);
      expect(answer.headers["cache-control"]).toBe("no-store");
      expect(answer.headers).not.toHaveProperty("x-cache");
      expect(answer.headers).not.toHaveProperty("etag");
      expect(answer.headers).not.toHaveProperty("age");
    }
    expect(engine.runs).toBe(2);
  });

  it("does not keep an engine error: the next request queries again", async () => {
    const { service, engine } = await cachedBigQueryService(NOW, TABLES);
    // Both attempts of the engine's retry meet the fault.
    service.standIn.injectFault({ kind: "backendError", times: 2 });
    const failed = await service.get(USAGE);
    expect(failed.statusCode).toBe(502);
    expect(failed.headers).not.toHaveProperty("x-cache");

    const recovered = await service.get(USAGE);
    expect(recovered.statusCode).toBe(200);
    expect(recovered.headers["x-cache"]).toBe("MISS");
    expect(engine.runs).toBe(2);
  });
});

describe("warming", () => {
  it("logs each refresh's engine work, job id and bytes, since no request line carries it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: "info" },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const { service, engine, clock } = await cachedBigQueryService(NOW, TABLES, logger);
    const other = USAGE.replace("hourly", "daily");
    // Twice each: only keys requested more than once are warmed.
    for (const path of [USAGE, USAGE, other, other]) await service.get(path);
    clock.ms += WARMING_SECONDS * SECOND_MS;
    await vi.advanceTimersByTimeAsync(WARMING_SECONDS * SECOND_MS);
    await vi.waitFor(() => expect(engine.settled).toBe(4));

    const refreshes = lines.filter((line) => line.msg === "cache refresh");
    const queryIds = service.standIn.queryCalls.slice(2).map((call) => call.queryId);
    // The queries say what caused them: the two requests' carry the caller, the refreshes' none.
    expect(service.standIn.queryCalls.map((call) => call.body.labels)).toEqual([
      ...[1, 2].map(() => ({
        endpoint: "usage_api-counts",
        trigger: "request",
        credential: "api_keys",
      })),
      ...[1, 2].map(() => ({ endpoint: "usage_api-counts", trigger: "warming" })),
    ]);
    expect(refreshes).toEqual(
      [USAGE, other].map(() =>
        expect.objectContaining({
          endpoint: "usage.api-counts",
          // Which entry: a short hash of its key, so the two refreshes tell their keys apart.
          entry: expect.stringMatching(/^[0-9a-f]{12}$/),
          queryId: expect.toBeOneOf(queryIds),
          bytesProcessed: expect.any(Number),
          rows: expect.any(Number),
        }),
      ),
    );
    expect(new Set(refreshes.map((line) => line.entry)).size).toBe(2);
    expect(lines.filter((line) => line.msg === "request")).toHaveLength(4);
  });

  it("serves the previous value as STALE while its refresh fails, then the refreshed one as HIT", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { service, engine, clock } = await cachedBigQueryService(NOW, TABLES);
    /** Moves the cache's clock and its timers together, then waits for refreshes to settle. */
    const advance = async (seconds: number) => {
      clock.ms += seconds * SECOND_MS;
      await vi.advanceTimersByTimeAsync(seconds * SECOND_MS);
      await vi.waitFor(() => expect(engine.settled).toBe(engine.runs));
    };

    const first = await service.get(USAGE);
    await service.get(USAGE); // a second request: the key is in use, so it is warmed
    service.standIn.injectFault({ kind: "backendError", times: 2 });
    await advance(WARMING_SECONDS);
    expect(engine.runs).toBe(2);

    const stale = await service.get(USAGE);
    expect(stale.statusCode).toBe(200);
    expect(stale.headers["x-cache"]).toBe("STALE");
    expect(stale.headers.age).toBe(String(WARMING_SECONDS));
    expect(stale.headers.etag).toBe(first.headers.etag);
    expect(stale.body).toBe(first.body);

    // The refresh is retried one warming interval later, now on new data.
    service.standIn.tables = {
      ...TABLES,
      edge_logs: [...(TABLES.edge_logs ?? []), edgeLog(shift(NOW, -1n * MINUTE))],
    };
    await advance(WARMING_SECONDS);
    expect(engine.runs).toBe(3);

    const refreshed = await service.get(USAGE);
    expect(refreshed.headers["x-cache"]).toBe("HIT");
    expect(refreshed.headers.age).toBe("0");
    expect(refreshed.headers.etag).not.toBe(first.headers.etag);
    expect(refreshed.body).not.toBe(first.body);
    expect(engine.runs).toBe(3);
  });
});
