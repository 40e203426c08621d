// Three replicas of the service behind one (simulated) load balancer, sharing a real redis-server:
// one engine query per cold key across all of them, one rate-limit budget, and local work without a
// 5xx while Redis is down. The replicas share one real DuckDB engine over demo data (replicas sharing a
// cache serve the same data); each has its own cache, admission gate, metrics and Redis connection.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { strongEtag } from "../../src/cache/etag.ts";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { RedisLink } from "../../src/redis/link.ts";
import { type ConfigOverrides, configFrom } from "../support/config-from.ts";
import { redisServer } from "../support/redis-server.ts";

const API_KEY = "replica-key-0123456789abcdef";
const STATS = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";
const usage = (interval: string) =>
  `/api/endpoints/usage.api-counts?project=${encodeURIComponent("^https://default\\.")}&interval=${interval}`;

const redis = redisServer();
let engine: DuckDbEngine;
beforeAll(async () => {
  engine = await createDuckDbEngine();
  await loadData(engine, { demoData: true });
}, 60_000);
afterAll(() => engine?.close());

interface Replica {
  app: FastifyInstance;
  link: RedisLink;
  /** Log lines about Redis, as the replica wrote them. */
  redisLog: string[];
  /** Its warnings' fields and messages. */
  warnings: Record<string, unknown>[];
  /** The Redis namespace the replicas share. */
  prefix: string;
}

const opened: Replica[] = [];
afterEach(async () => {
  for (const { app, link } of opened.splice(0)) {
    await app.close();
    await link.close();
  }
});

let prefixes = 0;
/** Three replicas on a Redis namespace of their own (one per test). */
async function replicas(
  options: {
    rateLimitPerMinute?: number;
    redisTimeoutMs?: number;
    /** The engine of replica i; default: the shared DuckDB engine. */
    engineOf?: (i: number) => QueryEngine;
    config?: ConfigOverrides;
    deps?: Partial<AppDeps>;
  } = {},
): Promise<Replica[]> {
  const prefix = `replicas-${process.pid}-${++prefixes}:`;
  const made: Replica[] = [];
  for (let i = 0; i < 3; i++) {
    const redisLog: string[] = [];
    const warnings: Record<string, unknown>[] = [];
    const logger = pino(
      { level: "info" },
      {
        write: (line: string) => {
          const fields = JSON.parse(line);
          if (fields.redis) redisLog.push(fields.msg);
          if (fields.level === 40) warnings.push(fields);
        },
      },
    );
    // Generous unless told: this machine is shared, and most tests here are about sharing.
    const timeoutMs = options.redisTimeoutMs ?? 1_000;
    const link = new RedisLink({ url: redis.url, prefix, timeoutMs, logger });
    expect(await link.waitUntilUp(5_000)).toBe(true);
    const app = await serviceApp(
      configFrom({
        auth: { apiKeys: [API_KEY] },
        shutdownGraceMs: 1_000,
        cache: { maxEntries: 100, maxBytes: 10_000_000 },
        rateLimitPerMinute: options.rateLimitPerMinute ?? 100_000,
        ...options.config,
      }),
      { engine: options.engineOf?.(i) ?? engine, cache: {}, redis: link, logger, ...options.deps },
    );
    made.push({ app, link, redisLog, warnings, prefix });
  }
  opened.push(...made);
  return made;
}

const get = (replica: Replica | undefined, url: string): Promise<LightMyRequestResponse> =>
  (replica as Replica).app.inject({ url, headers: { "x-api-key": API_KEY } });

/** One sample of a replica's /metrics; 0 when the series has none yet. */
async function metric(replica: Replica, series: string): Promise<number> {
  const text = (await get(replica, "/metrics")).body;
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Engine queries for `endpoint` run by all the replicas together, by trigger. */
async function engineQueries(all: Replica[], endpoint: string, trigger = "request") {
  let sum = 0;
  for (const replica of all) {
    sum += await metric(
      replica,
      `query_service_engine_queries_total{endpoint="${endpoint}",trigger="${trigger}"}`,
    );
  }
  return sum;
}

describe("three replicas, one cache", () => {
  it("answers 200 concurrent identical cold requests spread over them with one engine query", async () => {
    const three = await replicas();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => get(three[i % 3], STATS)),
    );
    expect(answers.map((answer) => answer.statusCode)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((answer) => answer.body)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer.headers.etag)).size).toBe(1);
    expect(await engineQueries(three, "functions.invocation-stats")).toBe(1);
  });

  it("makes a value cached by one replica a HIT with the same ETag on the others", async () => {
    const [a, b, c] = await replicas();
    const miss = await get(a, STATS);
    expect(miss.headers["x-cache"]).toBe("MISS");
    for (const other of [b, c]) {
      const hit = await get(other, STATS);
      expect(hit.headers["x-cache"]).toBe("HIT");
      expect(hit.headers.etag).toBe(miss.headers.etag);
      expect(hit.headers.age).toBe(miss.headers.age);
      expect(hit.body).toBe(miss.body);
      // A conditional request with the ETag one replica gave is a 304 on another.
      const etag = miss.headers.etag as string;
      const notModified = await (other as Replica).app.inject({
        url: STATS,
        headers: { "x-api-key": API_KEY, "if-none-match": etag },
      });
      expect(notModified.statusCode).toBe(304);
    }
    expect(await engineQueries([a, b, c] as Replica[], "functions.invocation-stats")).toBe(1);
  });

  it("exposes query_service_redis_up and counts engine queries by trigger", async () => {
    const three = await replicas();
    await get(three[0], usage("hourly"));
    // A replica that ran no query shows its zeros, so that sums over replicas are whole.
    const text = (await get(three[1], "/metrics")).body;
    expect(text).toContain("query_service_redis_up 1");
    expect(text).toContain(
      'query_service_engine_queries_total{endpoint="usage.api-counts",trigger="request"} 0',
    );
    expect(await engineQueries(three, "usage.api-counts")).toBe(1);
    expect(await engineQueries(three, "usage.api-counts", "warming")).toBe(0);
  });
});

describe("single flight across replicas", () => {
  it("lets another replica answer once the lock holder dies mid-query, within the lock's expiry", async () => {
    // Replica 0's engine never answers (until shutdown aborts it): the fault a real engine cannot make.
    const stuck: QueryEngine = {
      dialect: engine.dialect,
      run: (request) =>
        new Promise((_, reject) => {
          request.signal?.addEventListener("abort", () => reject(new Error("aborted")));
        }),
      ping: () => engine.ping(),
      close: async () => {},
    };
    const [holder, other] = await replicas({ engineOf: (i) => (i === 0 ? stuck : engine) });
    const holding = get(holder, STATS);
    await vi.waitFor(
      async () => expect(await metric(holder as Replica, "query_service_engine_running")).toBe(1),
      { timeout: 10_000 },
    );
    const waiting = get(other, STATS);
    // The holder dies: its connection goes, so it neither extends nor releases the lock.
    holder?.link.client.disconnect();
    const answer = await waiting;
    expect(answer.statusCode).toBe(200);
    expect(answer.headers["x-cache"]).toBe("MISS");
    expect(await engineQueries([other as Replica], "functions.invocation-stats")).toBe(1);
    await holder?.app.close();
    expect((await holding).statusCode).toBe(503);
  });
});

describe("one rate limit", () => {
  it("refuses the 21st request in the minute with 429, whichever replica gets it", async () => {
    const three = await replicas({ rateLimitPerMinute: 20 });
    for (let i = 0; i < 20; i++) {
      const answer = await get(three[i % 3], STATS);
      expect(answer.statusCode, `request ${i + 1}`).toBe(200);
    }
    for (const replica of three) {
      const refused = await get(replica, STATS);
      expect(refused.statusCode).toBe(429);
      expect(JSON.parse(refused.body).error.code).toBe("rate_limited");
    }
  });
});

describe("every other per-credential budget, once across replicas", () => {
  it("forced refreshes: the seventh no-cache in a minute is served as held, whichever replica gets it", async () => {
    const three = await replicas();
    await get(three[0], STATS);
    const forced = (i: number) =>
      (three[i % 3] as Replica).app.inject({
        url: STATS,
        headers: { "x-api-key": API_KEY, "cache-control": "no-cache" },
      });
    for (let i = 0; i < 6; i++) {
      expect((await forced(i)).headers["x-cache"], `forced refresh ${i + 1}`).toBe("REFRESH");
    }
    for (let i = 0; i < 3; i++) {
      expect((await forced(i)).headers["cache-status"]).toMatch(/; detail=refresh-budget$/);
    }
    expect(await engineQueries(three, "functions.invocation-stats")).toBe(7);
  });

  it("open follow streams: past the limit on one replica, refused on the others", async () => {
    const three = await replicas({ config: { follow: { maxPerCredential: 2 } } });
    const bases = await Promise.all(three.map(({ app }) => app.listen({ port: 0 })));
    const streams = new AbortController();
    const follow = (base: string | undefined) =>
      fetch(`${base}/api/endpoints/logs.all/follow?project=default&project_tier=FREE`, {
        headers: { "x-api-key": API_KEY },
        signal: streams.signal,
      });
    try {
      expect((await follow(bases[0])).status).toBe(200);
      expect((await follow(bases[1])).status).toBe(200);
      const third = await follow(bases[2]);
      expect(third.status).toBe(429);
      expect(((await third.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    } finally {
      streams.abort();
    }
  });

  it("a share of engine work: held on one replica, refused on another", async () => {
    let answer: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const slow: QueryEngine = {
      ...engine,
      run: async (request) => {
        await held;
        return engine.run(request);
      },
    };
    const [first, second] = await replicas({
      engineOf: () => slow,
      config: { admission: { maxPerCredential: 1 } },
    });
    const holding = get(first, usage("daily"));
    await vi.waitFor(
      async () => expect(await metric(first as Replica, "query_service_engine_running")).toBe(1),
      { timeout: 10_000 },
    );
    const refused = await get(second, usage("hourly"));
    expect(refused.statusCode).toBe(429);
    expect(JSON.parse(refused.body).error.code).toBe("rate_limited");
    answer();
    expect((await holding).statusCode).toBe(200);
    expect((await get(second, usage("hourly"))).statusCode).toBe(200);
  });
});

const JSON_TYPE = "application/json; charset=utf-8";

/** Fields that make a stored value one the service did not write (stored over the good fields). */
const sealed = (body: string, headers: Record<string, string>) => ({
  body,
  headers: JSON.stringify(headers),
  etag: strongEtag(body, headers),
});
const TAMPERED: [string, (good: Record<string, string>) => Record<string, string>][] = [
  ["headers that are not JSON", () => ({ headers: "{not json" })],
  [
    "a Content-Type of another kind",
    (good) => sealed(good.body ?? "", { "content-type": "text/html" }),
  ],
  [
    "a Set-Cookie",
    (good) =>
      sealed(good.body ?? "", { "content-type": JSON_TYPE, "set-cookie": "session=stolen" }),
  ],
  [
    "a header with a line break",
    (good) =>
      sealed(good.body ?? "", { "content-type": JSON_TYPE, "x-result-truncated": "true\r\nx: y" }),
  ],
  ["a body its ETag is not of", () => ({ body: '{"result":[{"forged":true}]}' })],
  [
    "a body not of the service's form",
    () => sealed('{"result":"forged"}', { "content-type": JSON_TYPE }),
  ],
  [
    // JSON, but with line breaks: in a watch's `data:` line it would forge events.
    "a body JSON.stringify would not write",
    () => sealed('{"result":\n[]}\n\nevent: end', { "content-type": JSON_TYPE }),
  ],
  ["a computedAt that is not a number", () => ({ computedAt: "soon" })],
  [
    "a computedAt a day ahead",
    (good) => ({ computedAt: String(Number(good.computedAt) + 86_400_000) }),
  ],
];

/** An answer as the service makes it: its own headers, an ETag of its bytes. */
function expectServiceMade(answer: LightMyRequestResponse) {
  expect(answer.statusCode, answer.body).toBe(200);
  expect(answer.headers["content-type"]).toBe(JSON_TYPE);
  expect(answer.headers["set-cookie"]).toBeUndefined();
  expect(JSON.parse(answer.body).result).toEqual(expect.any(Array));
  expect(answer.headers.etag).toBe(strongEtag(answer.body, { "content-type": JSON_TYPE }));
}

describe("a value in Redis that no replica wrote", () => {
  it.each(TAMPERED)(
    "with %s: never served, deleted, reported once, computed afresh; the link stays up",
    async (_, tamper) => {
      const clock = { ms: Date.now() };
      const cache = { maxEntries: 100, maxBytes: 10_000_000, now: () => clock.ms };
      const [holder, cold] = (await replicas({ deps: { cache } })) as [Replica, Replica];
      const held = await get(holder, STATS);
      const redisClient = new Redis(redis.url);
      try {
        const [key] = await redisClient.keys(`${holder.prefix}result:*`);
        const good = await redisClient.hgetall(key as string);

        // A replica holding nothing reads it.
        await redisClient.hset(key as string, tamper(good));
        const fresh = await get(cold, STATS);
        expectServiceMade(fresh);
        expect(fresh.headers["x-cache"]).toBe("MISS");
        expect(await redisClient.hgetall(key as string)).toMatchObject({
          body: fresh.body,
          etag: fresh.headers.etag,
        });

        // The replica holding a copy compares it with a newer one in Redis, a second later.
        await redisClient.hset(key as string, {
          computedAt: String(Number(good.computedAt) + 1),
          ...tamper(good),
        });
        clock.ms += 2_000;
        const again = await get(holder, STATS);
        expectServiceMade(again);
        expect(again.body).toBe(held.body);
        await vi.waitFor(async () =>
          expect(await redisClient.hmget(key as string, "etag", "computedAt")).toEqual([
            held.headers.etag,
            good.computedAt,
          ]),
        );
      } finally {
        redisClient.disconnect();
      }
      const reports = [holder, cold].flatMap((replica) => replica.warnings);
      expect(reports.map((fields) => fields.msg)).toEqual([
        expect.stringContaining("not one a replica wrote"),
        expect.stringContaining("not one a replica wrote"),
      ]);
      for (const replica of [holder, cold])
        expect(replica.redisLog).toEqual([expect.stringContaining("Redis answers")]);
    },
  );
});

describe("Redis down and back", () => {
  it("answers without a 5xx while Redis is down, logs each transition once, then shares again", async () => {
    const three = await replicas();
    const before = await Promise.all(
      Array.from({ length: 30 }, (_, i) => get(three[i % 3], usage("minutely"))),
    );
    expect(before.every((answer) => answer.statusCode === 200)).toBe(true);

    // Redis crashes in the middle of the load.
    const during = Array.from({ length: 60 }, (_, i) => get(three[i % 3], usage("daily")));
    await redis.kill();
    const more = Array.from({ length: 60 }, (_, i) => get(three[i % 3], usage("daily")));
    const answered = await Promise.all([...during, ...more]);
    expect(answered.filter((answer) => answer.statusCode !== 200)).toEqual([]);
    for (const replica of three) {
      expect(replica.link.up).toBe(false);
      expect(await metric(replica, "query_service_redis_up")).toBe(0);
      // Still answered locally, cached locally.
      expect((await get(replica, usage("minutely"))).statusCode).toBe(200);
    }

    await redis.start();
    for (const replica of three) expect(await replica.link.waitUntilUp(10_000)).toBe(true);
    for (const replica of three) {
      expect(replica.redisLog).toEqual([
        expect.stringContaining("Redis answers"),
        expect.stringContaining("Redis unavailable"),
        expect.stringContaining("Redis answers"),
      ]);
    }
    // Sharing resumed: a cold key costs one query across the three.
    const hourly = `/api/endpoints/functions.invocation-stats?project=staging&interval=1hr`;
    const resumed = await Promise.all(
      Array.from({ length: 60 }, (_, i) => get(three[i % 3], hourly)),
    );
    expect(resumed.every((answer) => answer.statusCode === 200)).toBe(true);
    expect(await engineQueries(three, "functions.invocation-stats")).toBe(1);
  });

  it("answers from each replica's own cache and limits while Redis hangs, then shares again", async () => {
    const three = await replicas({ redisTimeoutMs: 50, rateLimitPerMinute: 1_000 });
    const cached = await get(three[0], STATS);
    redis.pause();
    try {
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) => get(three[i % 3], i % 2 ? STATS : usage("daily"))),
      );
      expect(answers.map((answer) => answer.statusCode)).toEqual(answers.map(() => 200));
      expect(answers.filter((_, i) => i % 2).map((answer) => answer.body)).toEqual(
        Array.from({ length: 15 }, () => cached.body),
      );
      for (const replica of three) expect(replica.link.up).toBe(false);
    } finally {
      redis.resume();
    }
    for (const replica of three) expect(await replica.link.waitUntilUp(10_000)).toBe(true);
    for (const replica of three) {
      expect(replica.redisLog.filter((line) => line.includes("Redis unavailable"))).toHaveLength(1);
    }
  });
});
