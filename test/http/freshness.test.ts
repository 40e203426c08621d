// How fresh an answer is and what it cost, as a client reads it: Cache-Status (RFC 9211),
// Server-Timing, X-Bytes-Processed and Timing-Allow-Origin, on the BigQuery stand-in.
import { describe, expect, it } from "vitest";
import { cachedService } from "../support/cached-service.ts";
import { edgeLog, functionCall, MINUTE, PROJECT, shift } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const TTL_SECONDS = 900;
const WARMING_MS = 300_000;
const STATS = `/api/endpoints/functions.invocation-stats?project=${PROJECT}&interval=1hr`;
const LOGS = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=PRO`;
const TABLES: Record<string, Row[]> = {
  edge_logs: [edgeLog(shift(NOW, -5n * MINUTE))],
  function_edge_logs: [functionCall(shift(NOW, -3n * MINUTE))],
};

const SERVER_TIMING = /^cache;desc=(\w+)(, engine;dur=[\d.]+)?, total;dur=[\d.]+$/;

describe("freshness and cost headers", () => {
  it("a miss: stored, the engine's time, the bytes it scanned", async () => {
    const { service } = await cachedService(NOW, TABLES);
    const miss = await service.get(STATS);
    expect(miss.headers["cache-status"]).toBe("query-service; fwd=miss; stored");
    expect(miss.headers["server-timing"]).toMatch(SERVER_TIMING);
    expect(miss.headers["server-timing"]).toMatch(/^cache;desc=MISS, engine;dur=[\d.]+, total/);
    expect(Number(miss.headers["x-bytes-processed"])).toBeGreaterThan(0);
    expect(miss.headers["timing-allow-origin"]).toBe("*");
  });

  it("a hit: its seconds left, no engine time, and the bytes of the query that computed it", async () => {
    const { service, clock } = await cachedService(NOW, TABLES);
    const miss = await service.get(STATS);
    clock.ms += 12_000;
    const hit = await service.get(STATS);
    expect(hit.headers["cache-status"]).toBe(`query-service; hit; ttl=${TTL_SECONDS - 12}`);
    expect(hit.headers["server-timing"]).toMatch(/^cache;desc=HIT, total;dur=[\d.]+$/);
    expect(hit.headers["x-bytes-processed"]).toBe(miss.headers["x-bytes-processed"]);
    // A 304 says the same.
    const notModified = await service.get(STATS, { "if-none-match": hit.headers.etag as string });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers["cache-status"]).toBe(`query-service; hit; ttl=${TTL_SECONDS - 12}`);
  });

  it("a stale answer says so", async () => {
    const { service, clock } = await cachedService(NOW, TABLES);
    await service.get(STATS);
    clock.ms += WARMING_MS + 1_000;
    const stale = await service.get(STATS);
    expect(stale.headers["x-cache"]).toBe("STALE");
    expect(stale.headers["cache-status"]).toBe(
      `query-service; hit; ttl=${TTL_SECONDS - 301}; detail=stale`,
    );
    expect(stale.headers["server-timing"]).toMatch(/^cache;desc=STALE, total/);
  });

  it("an endpoint without a cache: a URI miss every time, with the engine's time", async () => {
    const { service } = await cachedService(NOW, TABLES);
    const logs = await service.get(LOGS);
    expect(logs.headers["cache-status"]).toBe("query-service; fwd=uri-miss");
    expect(logs.headers["server-timing"]).toMatch(/^cache;desc=MISS, engine;dur=[\d.]+, total/);
    expect(Number(logs.headers["x-bytes-processed"])).toBeGreaterThan(0);
  });

  it("exposes them to browsers", async () => {
    const { service } = await cachedService(NOW, TABLES);
    const response = await service.get(STATS, { origin: "https://dashboard.example" });
    const exposed = String(response.headers["access-control-expose-headers"]).split(", ");
    expect(exposed).toEqual(
      expect.arrayContaining(["Cache-Status", "Server-Timing", "X-Bytes-Processed"]),
    );
  });
});
