import { spawnSync } from "node:child_process";
import { SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { edgeLog, micros, PROJECT, SECOND, shift } from "../support/fixtures.ts";
import { startBigQueryService, startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const USAGE = `/api/endpoints/usage.api-counts?project=${PROJECT}&interval=hourly`;

/** The value of one sample line of a Prometheus text exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

afterEach(() => {
  vi.useRealTimers();
});

describe("GET /metrics", () => {
  it("needs the API key", async () => {
    const { app } = await startService({ now: NOW });
    expect((await app.inject("/metrics")).statusCode).toBe(401);
  });

  it("counts requests by endpoint and status, and the cache's hits, misses and failed refreshes", async () => {
    // The cache's warming runs on setTimeout: fake those, and move the cache's clock with them.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let now = Date.parse(NOW);
    const { get, standIn } = await startBigQueryService({
      now: NOW,
      tables: { edge_logs: [edgeLog(shift(NOW, -5n * SECOND))] },
      config: { cache: { maxEntries: 10, maxBytes: 1e6 } },
      cache: { now: () => now },
      engine: { retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 } },
    });
    await get(USAGE);
    await get(USAGE);
    await get(`/api/endpoints/usage.api-counts?project=${PROJECT}&interval=weekly`);
    standIn.injectFault({ kind: "invalidQuery" });
    now += 300_000;
    await vi.advanceTimersByTimeAsync(300_000);
    vi.useRealTimers();
    const failures = async () =>
      sample((await get("/metrics")).body, "query_service_cache_refresh_failures_total");
    await expect.poll(failures).toBe(1);
    await get(USAGE);

    const text = (await get("/metrics")).body;
    expect(
      sample(text, 'query_service_requests_total{endpoint="usage.api-counts",status="200"}'),
    ).toBe(3);
    expect(
      sample(text, 'query_service_requests_total{endpoint="usage.api-counts",status="400"}'),
    ).toBe(1);
    expect(sample(text, "query_service_cache_misses_total")).toBe(1);
    expect(sample(text, "query_service_cache_hits_total")).toBe(1);
    expect(sample(text, "query_service_cache_stale_total")).toBe(1);
    expect(sample(text, "query_service_cache_refreshes_total")).toBe(1);
    expect(sample(text, "query_service_cache_entries")).toBe(1);
  });

  it("serves request durations as a Prometheus histogram by endpoint", async () => {
    const { get } = await startService({ now: NOW });
    await get(USAGE);
    await get(USAGE);
    await get("/api/endpoints/no.such-endpoint");
    const text = (await get("/metrics")).body;
    const name = "query_service_request_duration_seconds";
    expect(text).toContain(`# TYPE ${name} histogram`);
    const usage = 'endpoint="usage.api-counts"';
    const bounds = ["0.0005", "0.001", "0.005", "0.025", "0.1", "0.5", "2.5", "10", "30", "+Inf"];
    const buckets = bounds.map((le) => sample(text, `${name}_bucket{le="${le}",${usage}}`));
    // Cumulative: each bucket holds the ones below it, and +Inf all of them.
    for (const [i, count] of buckets.entries()) {
      expect(count).toBeGreaterThanOrEqual(i === 0 ? 0 : (buckets[i - 1] as number));
    }
    expect(buckets.at(-1)).toBe(2);
    expect(sample(text, `${name}_count{${usage}}`)).toBe(2);
    expect(sample(text, `${name}_sum{${usage}}`)).toBeGreaterThan(0);
    expect(sample(text, `${name}_count{endpoint="unknown"}`)).toBe(1);
  });

  it("counts refused requests (401) and unknown endpoints (404), without a series per unknown name", async () => {
    const { get } = await startService({ now: NOW });
    await get(USAGE, { "x-api-key": "wrong-key-0123456789" });
    await get("/api/endpoints/no.such-endpoint");
    await get("/api/endpoints/query/another-made-up-name");
    const text = (await get("/metrics")).body;
    expect(
      sample(text, 'query_service_requests_total{endpoint="usage.api-counts",status="401"}'),
    ).toBe(1);
    expect(sample(text, 'query_service_requests_total{endpoint="unknown",status="404"}')).toBe(2);
    expect(text).not.toContain("no.such-endpoint");
  });

  it("has no data watermark when the engine's data is current when queried (not LOCAL_DATA)", async () => {
    const { get } = await startService({ now: NOW });
    expect((await get("/metrics")).body).not.toContain("query_service_data_watermark_seconds");
  });

  it("does not spend the caller's query budget", async () => {
    const { get } = await startService({ now: NOW, config: { rateLimitPerMinute: 2 } });
    for (let scrape = 0; scrape < 5; scrape++) expect((await get("/metrics")).statusCode).toBe(200);
    const catalog = "/api/endpoints";
    expect((await get(catalog)).statusCode).toBe(200);
    expect((await get(catalog)).statusCode).toBe(200);
    expect((await get(catalog)).statusCode).toBe(429);
  });

  it("is refused to a credential whose * scope pins a parameter: it would see every tenant's counts", async () => {
    const secret = "a-token-secret-of-32-bytes-or-more";
    const { get } = await startService({
      now: NOW,
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 600 }),
    });
    const token = (fixed_params: Record<string, string>) =>
      new SignJWT({ scopes: [{ endpoint: "*", fixed_params }] })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject("tenant")
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(secret));
    const metrics = async (fixed: Record<string, string>) =>
      get("/metrics", { authorization: `Bearer ${await token(fixed)}` });
    const pinned = await metrics({ project: "^https://acme\\." });
    expect(pinned.statusCode).toBe(403);
    expect(JSON.parse(pinned.body)).toMatchObject({ error: { code: "forbidden" } });
    expect((await metrics({})).statusCode).toBe(200);
  });
});

const SAMPLE_SUFFIXES: Record<string, string[]> = {
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["_sum", "_count"],
};

/**
 * The exposition with one zero sample added to each family that has none yet: Prometheus's parser
 * drops a family without samples, so promtool would not look at it.
 */
function everyFamilySampled(text: string): string {
  const sampled = new Set(
    text
      .split("\n")
      .filter((line) => /^[a-z]/.test(line))
      .map((line) => /^\w+/.exec(line)?.[0]),
  );
  return text.replace(/^# TYPE (\w+) (\w+)$/gm, (line, name: string, type: string) => {
    const suffixes = SAMPLE_SUFFIXES[type] ?? [""];
    if (suffixes.some((suffix) => sampled.has(name + suffix))) return line;
    const samples = suffixes.map(
      (suffix) => `${name}${suffix}${suffix === "_bucket" ? '{le="+Inf"}' : ""} 0`,
    );
    return [line, ...samples].join("\n");
  });
}

describe("GET /metrics, read by Prometheus's own linter", () => {
  it("passes `promtool check metrics` with no finding, every family sampled", async () => {
    const { get } = await startService({
      now: NOW,
      tables: { edge_logs: [edgeLog(shift(NOW, -5n * SECOND))] },
      config: { cache: { maxEntries: 10, maxBytes: 1e6 } },
      cache: {},
      // As LOCAL_DATA's engine: its data watermark is a family too.
      wrapEngine: (engine) => ({ ...engine, loadedThrough: () => micros(NOW) }),
    });
    await get(USAGE);
    await get(USAGE);
    await get("/api/endpoints/no.such-endpoint");
    await get(`/api/endpoints/logs.all/follow?project=${PROJECT}&project_tier=FREE&until=settled`, {
      accept: "application/x-ndjson",
    });
    const scraped = await get("/metrics");
    expect(scraped.statusCode).toBe(200);
    expect(sample(scraped.body, "query_service_data_watermark_seconds")).toBe(
      Number(micros(NOW)) / 1e6,
    );
    const exposition = everyFamilySampled(scraped.body);
    const promtool = spawnSync("promtool", ["check", "metrics"], {
      input: exposition,
      encoding: "utf8",
    });
    expect(promtool.error).toBeUndefined();
    expect({ status: promtool.status, findings: promtool.stdout + promtool.stderr }).toEqual({
      status: 0,
      findings: "",
    });
  });
});
