// How fresh an answer is and what it cost, as a client reads it: Cache-Status (RFC 9211),
// Server-Timing, X-Bytes-Processed and Timing-Allow-Origin; the bytes a query scanned on the BigQuery
// stand-in, the rest on the embedded engine.
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { cachedBigQueryService, cachedService } from "../support/cached-service.ts";
import { edgeLog, functionCall, MINUTE, PROJECT, shift } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";
import { API_KEY } from "../support/service.ts";

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
    const { service } = await cachedBigQueryService(NOW, TABLES);
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
    const { service } = await cachedBigQueryService(NOW, TABLES);
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

  describe("a caller asking for fresher (Cache-Control)", () => {
    it("no-cache recomputes now, stores it for everyone, and says so", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      await service.get(STATS);
      clock.ms += 30_000;
      const forced = await service.get(STATS, { "cache-control": "no-cache" });
      expect(engine.runs).toBe(2);
      expect(forced.headers["x-cache"]).toBe("REFRESH");
      expect(forced.headers.age).toBe("0");
      expect(forced.headers["cache-status"]).toBe("query-service; fwd=request; stored");
      expect(forced.headers["server-timing"]).toMatch(
        /^cache;desc=REFRESH, engine;dur=[\d.]+, total/,
      );
      // Everyone now gets the new value.
      const after = await service.get(STATS);
      expect(after.headers["x-cache"]).toBe("HIT");
      expect(after.headers.age).toBe("0");
      expect(engine.runs).toBe(2);
    });

    it("max-age=n serves a value at most n seconds old, else recomputes", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      await service.get(STATS);
      clock.ms += 30_000;
      const young = await service.get(STATS, { "cache-control": "max-age=60" });
      expect(young.headers["x-cache"]).toBe("HIT");
      expect(engine.runs).toBe(1);
      const old = await service.get(STATS, { "cache-control": "max-age=10" });
      expect(old.headers["x-cache"]).toBe("REFRESH");
      expect(engine.runs).toBe(2);
    });

    it("directives that ask nothing of a held value, or a max-age without a number, are a plain request", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      await service.get(STATS);
      clock.ms += 30_000;
      for (const header of ["max-stale", "max-age=", "max-age=ten", "no-transform"]) {
        const answer = await service.get(STATS, { "cache-control": header });
        expect(answer.headers["x-cache"], header).toBe("HIT");
      }
      expect(engine.runs).toBe(1);
    });

    it("only-if-cached: 504 not_cached without an entry and never a query; the entry when there is one", async () => {
      const { service, engine } = await cachedService(NOW, TABLES);
      const none = await service.get(STATS, { "cache-control": "only-if-cached" });
      expect(none.statusCode).toBe(504);
      expect(JSON.parse(none.body).error.code).toBe("not_cached");
      expect(engine.runs).toBe(0);
      await service.get(STATS);
      const held = await service.get(STATS, { "cache-control": "only-if-cached, no-cache" });
      expect(held.statusCode).toBe(200);
      expect(held.headers["x-cache"]).toBe("HIT");
      expect(engine.runs).toBe(1);
    });

    it("spends a budget of 6 a minute per credential: the seventh is served as held, without a query", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      await service.get(STATS);
      for (let i = 0; i < 6; i++) {
        clock.ms += 1_000;
        const forced = await service.get(STATS, { "cache-control": "no-cache" });
        expect(forced.headers["x-cache"]).toBe("REFRESH");
      }
      expect(engine.runs).toBe(7);
      clock.ms += 5_000;
      const seventh = await service.get(STATS, { "cache-control": "no-cache" });
      expect(seventh.statusCode).toBe(200);
      expect(seventh.headers["x-cache"]).toBe("HIT");
      expect(seventh.headers["cache-status"]).toBe(
        `query-service; hit; ttl=${TTL_SECONDS - 5}; detail=refresh-budget`,
      );
      expect(engine.runs).toBe(7);
    });

    it("takes a token's own forced_refresh_per_minute over the default", async () => {
      const secret = "a-test-secret-of-at-least-32-bytes!!";
      const { service, engine, clock } = await cachedService(NOW, TABLES, undefined, {
        tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 3600 }),
      });
      const token = await new SignJWT({
        sub: "dashboard",
        scopes: [{ endpoint: "*" }],
        forced_refresh_per_minute: 1,
      })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("10m")
        .sign(new TextEncoder().encode(secret));
      const asToken = { authorization: `Bearer ${token}`, "cache-control": "no-cache" };
      await service.get(STATS);
      clock.ms += 1_000;
      expect((await service.get(STATS, asToken)).headers["x-cache"]).toBe("REFRESH");
      clock.ms += 1_000;
      expect((await service.get(STATS, asToken)).headers["cache-status"]).toMatch(
        /detail=refresh-budget$/,
      );
      expect(engine.runs).toBe(2);
    });

    it("a poll with If-None-Match through Node's fetch, which adds no-cache and Pragma, is answered as held", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      const url = `${await service.app.listen({ host: "127.0.0.1", port: 0 })}${STATS}`;
      const poll = (etag: string) =>
        fetch(url, { headers: { "x-api-key": API_KEY, "if-none-match": etag } });
      const first = await fetch(url, { headers: { "x-api-key": API_KEY } });
      const etag = first.headers.get("etag") as string;
      // Past the budget of 6: a poll that spent it would be refused a refresh by the seventh.
      for (let i = 0; i < 8; i++) {
        clock.ms += 1_000;
        const unchanged = await poll(etag);
        expect(unchanged.status).toBe(304);
        expect(unchanged.headers.get("x-cache")).toBe("HIT");
        expect(unchanged.headers.get("content-type")).toBeNull();
        const other = await poll('"another-etag"');
        expect(other.status).toBe(200);
        expect(other.headers.get("x-cache")).toBe("HIT");
        expect(await other.text()).toBe(await first.clone().text());
      }
      expect(engine.runs).toBe(1);
      // What fetch added is what it sends; the budget is whole for a caller asking on purpose.
      const asked = await fetch(url, { headers: { "x-api-key": API_KEY }, cache: "no-store" });
      expect(asked.headers.get("x-cache")).toBe("REFRESH");
      expect(engine.runs).toBe(2);
    });

    it("with If-None-Match, no-cache and max-age=0 are a revalidation, max-age=n still asks", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      const etag = (await service.get(STATS)).headers.etag as string;
      clock.ms += 30_000;
      for (const header of ["no-cache", "max-age=0"]) {
        const revalidated = await service.get(STATS, {
          "cache-control": header,
          pragma: "no-cache",
          "if-none-match": etag,
        });
        expect(revalidated.statusCode, header).toBe(304);
      }
      expect(engine.runs).toBe(1);
      const fresher = await service.get(STATS, {
        "cache-control": "max-age=10",
        "if-none-match": etag,
      });
      expect(fresher.headers["x-cache"]).toBe("REFRESH");
      expect(engine.runs).toBe(2);
    });

    it("50 concurrent no-cache requests on one key make one engine query", async () => {
      const { service, engine, clock } = await cachedService(NOW, TABLES);
      await service.get(STATS);
      clock.ms += 30_000;
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => service.get(STATS, { "cache-control": "no-cache" })),
      );
      expect(engine.runs).toBe(2);
      expect(answers.every((answer) => answer.statusCode === 200)).toBe(true);
      expect(new Set(answers.map((answer) => answer.headers.etag)).size).toBe(1);
    });
  });
});
