// GET …/<name>/watch over real HTTP: the current answer, then each new value of the cached key once,
// from the cache's own warming and never a query of its own; resumes, refusals, shared caps, ends
// and metrics. The stand-in's data is what the test sets; the cache's clock is the test's.
import { SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { cachedBigQueryService } from "../support/cached-service.ts";
import { functionCall, MINUTE, PROJECT, shift } from "../support/fixtures.ts";
import { open, type Stream } from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const STATS_QUERY = `project=${PROJECT}&interval=1hr`;
const STATS = `/api/endpoints/functions.invocation-stats?${STATS_QUERY}`;
const WATCH = `/api/endpoints/functions.invocation-stats/watch?${STATS_QUERY}`;
const calls = (count: number, statuses = [200]): Row[] =>
  Array.from({ length: count }, (_, i) =>
    functionCall(shift(NOW, -BigInt(i + 1) * MINUTE), { statuses }),
  );

afterEach(() => {
  vi.useRealTimers();
});

async function watchedService(deps: Parameters<typeof cachedBigQueryService>[3] = {}) {
  const started = await cachedBigQueryService(
    NOW,
    { function_edge_logs: calls(3) },
    undefined,
    deps,
  );
  const base = await started.service.app.listen({ host: "127.0.0.1", port: 0 });
  const { standIn } = started.service;
  const setCalls = (rows: Row[]) => {
    standIn.tables = { ...standIn.tables, function_edge_logs: rows };
  };
  /** A second later, what a client asking for a fresh value gets: also the cache's new value. */
  const recompute = () => {
    started.clock.ms += 1000;
    return started.service.get(STATS, { "cache-control": "no-cache" });
  };
  return { ...started, base, setCalls, recompute };
}

/** Invocations counted over every bucket of an invocation-stats answer. */
const invocations = (body: string) =>
  (JSON.parse(body).result as { count: number }[]).reduce((sum, row) => sum + Number(row.count), 0);

const results = (stream: Stream) => stream.events.filter((event) => event.event === "result");

describe("a watch stream", () => {
  it("sends the current answer as GET does, then each new value once, and nothing for the same bytes", async () => {
    const { service, base, engine, setCalls, recompute } = await watchedService();
    const get = await service.get(STATS);
    const stream = await open(`${base}${WATCH}`);
    await stream.until(() => results(stream).length === 1);
    expect(results(stream)[0]).toEqual({ event: "result", id: get.headers.etag, data: get.body });
    // How fresh it is, as Cache-Status and Age would say, in comment lines a client may ignore.
    expect(stream.frames[0]).toMatch(/^: cache-status: query-service; hit; ttl=900\n: age: 0\n/);
    expect(engine.runs).toBe(1);

    setCalls(calls(5));
    const changed = await recompute();
    await stream.until(() => results(stream).length === 2);
    expect(results(stream)[1]).toEqual({
      event: "result",
      id: changed.headers.etag,
      data: changed.body,
    });
    expect(invocations(changed.body)).toBe(5);

    const same = await recompute();
    expect(same.headers.etag).toBe(changed.headers.etag);
    setCalls(calls(7));
    const last = await recompute();
    await stream.until(() => results(stream).length === 3);
    expect(results(stream).map((event) => event.id)).toEqual([
      get.headers.etag,
      changed.headers.etag,
      last.headers.etag,
    ]);
  });

  it("resumes with Last-Event-ID: nothing until the value changes", async () => {
    const { service, base, setCalls, recompute } = await watchedService();
    const current = (await service.get(STATS)).headers.etag as string;
    const stream = await open(`${base}${WATCH}`, { "last-event-id": current });
    setCalls(calls(4));
    const changed = await recompute();
    await stream.until(() => results(stream).length === 1);
    expect(results(stream).map((event) => event.id)).toEqual([changed.headers.etag]);
  });

  it("tells its watchers of a value too large to keep, with one query per warming interval", async () => {
    // A bound below the answer's size: every value is served and told, never stored.
    const clock = { ms: 0 };
    const { service, engine } = await cachedBigQueryService(
      NOW,
      { function_edge_logs: calls(3) },
      undefined,
      {
        config: { cache: { maxEntries: 100, maxBytes: 300 } },
        cache: { now: () => clock.ms },
      },
    );
    const base = await service.app.listen({ host: "127.0.0.1", port: 0 });
    const first = await service.get(STATS);
    expect(first.body.length).toBeGreaterThan(300);
    const stream = await open(`${base}${WATCH}`);
    await stream.until(() => results(stream).length === 1);
    expect(results(stream)[0]?.data).toBe(first.body);

    // The looks at watched keys in the next second (every half second) find it not held, and not due.
    const startRuns = engine.runs;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(engine.runs).toBe(startRuns);

    service.standIn.tables = { ...service.standIn.tables, function_edge_logs: calls(5) };
    for (let interval = 1; interval <= 12; interval++) {
      clock.ms += 300_000;
      // The next look loads it again: due a warming interval after it was computed.
      await expect.poll(() => engine.runs).toBe(startRuns + interval);
    }
    await stream.until(() => results(stream).length === 2);
    expect(invocations(results(stream)[1]?.data ?? "")).toBe(5);
    expect(results(stream)).toHaveLength(2);
    expect(engine.runs - startRuns).toBe(12);
  });

  it("answers at /query/<uuid>/watch too, and refuses what it cannot watch before opening", async () => {
    const { service, base } = await watchedService();
    const byId = await open(
      `${base}/api/endpoints/query/301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c/watch?${STATS_QUERY}`,
    );
    await byId.until(() => results(byId).length === 1);

    const logs = await service.get(`/api/endpoints/logs.all/watch?project=${PROJECT}`);
    expect(logs.statusCode).toBe(404);
    expect(JSON.parse(logs.body).error.message).toContain("/api/endpoints/logs.all/follow");
    const bad = await service.get("/api/endpoints/functions.invocation-stats/watch?interval=1hr");
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).error.code).toBe("invalid_params");
    const anonymous = await service.get(WATCH, { "x-api-key": "not-a-key-0123456789abcdef" });
    expect(anonymous.statusCode).toBe(401);
    const json = await service.get(WATCH, { accept: "application/json" });
    expect(json.statusCode).toBe(406);
  });

  it("keeps a scope's fixed parameters: a watch of another project is refused 403", async () => {
    const secret = "a-test-secret-of-at-least-32-bytes!!";
    const token = await new SignJWT({
      sub: "tenant",
      scopes: [
        { endpoint: "functions.invocation-stats", fixed_params: { project: "someone-else" } },
      ],
    })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(secret));
    const { service } = await watchedService({
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 7200 }),
    });
    const refused = await service.get(WATCH, { authorization: `Bearer ${token}` });
    expect(refused.statusCode).toBe(403);
  });

  it("shares the credential's stream cap with follow streams: one budget", async () => {
    const { service, base } = await watchedService({ config: { follow: { maxPerCredential: 2 } } });
    await open(`${base}/api/endpoints/logs.all/follow?project=${PROJECT}&project_tier=FREE`);
    const watch = await open(`${base}${WATCH}`);
    await watch.until(() => results(watch).length === 1);
    const third = await service.get(WATCH);
    expect(third.statusCode).toBe(429);
    expect(JSON.parse(third.body).error.code).toBe("rate_limited");
  });

  it("counts as one request against the credential's rate limit, however long it stays open", async () => {
    const { service, base } = await watchedService({ config: { rateLimitPerMinute: 2 } });
    const stream = await open(`${base}${WATCH}`);
    await stream.until(() => results(stream).length === 1);
    expect((await service.get(STATS)).statusCode).toBe(200);
    const third = await service.get(WATCH);
    expect(third.statusCode).toBe(429);
    expect(JSON.parse(third.body).error.code).toBe("rate_limited");
  });

  it("ends with event: end shutting_down when the service closes, and token_expired with its token", async () => {
    const secret = "a-test-secret-of-at-least-32-bytes!!";
    const token = await new SignJWT({ sub: "dashboard", scopes: [{ endpoint: "*" }] })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime(Math.floor(Date.now() / 1000) + 2)
      .sign(new TextEncoder().encode(secret));
    const { service, base } = await watchedService({
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 3600 }),
    });
    const expiring = await open(`${base}${WATCH}`, { authorization: `Bearer ${token}` });
    await expiring.ended;
    expect(expiring.events.at(-1)).toEqual({ event: "end", data: '{"reason":"token_expired"}' });

    const closing = await open(`${base}${WATCH}`);
    await closing.until(() => results(closing).length === 1);
    await service.app.close();
    await closing.ended;
    expect(closing.events.at(-1)).toEqual({ event: "end", data: '{"reason":"shutting_down"}' });
  });

  it("counts open watches and the events sent in /metrics", async () => {
    const { service, base, setCalls, recompute } = await watchedService();
    const streams = [await open(`${base}${WATCH}`), await open(`${base}${WATCH}`)];
    for (const stream of streams) await stream.until(() => results(stream).length === 1);
    setCalls(calls(2));
    await recompute();
    for (const stream of streams) await stream.until(() => results(stream).length === 2);
    const metrics = (await service.get("/metrics")).body;
    expect(metrics).toContain("\nquery_service_watch_streams_open 2\n");
    expect(metrics).toContain("\nquery_service_watch_events_sent_total 4\n");
    expect(metrics).toContain("\nquery_service_cache_watched_keys 1\n");
    streams[0]?.close();
    await expect
      .poll(async () => (await service.get("/metrics")).body)
      .toContain("\nquery_service_watch_streams_open 1\n");
  });
});
