// Replicas sharing one result cache through a real redis-server. Each "replica" is a ResultCache with
// its own connection; they share the clock (`now`), as replicas share wall time. Redis's own
// expiries are real time but decide nothing here: freshness is read from the values' computedAt.
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { strongEtag } from "../../src/cache/etag.ts";
import type { Payload } from "../../src/cache/payload.ts";
import { type CachePolicy, type CacheStatus, ResultCache } from "../../src/cache/result-cache.ts";
import { SharedResults, type SharedResultsOptions } from "../../src/cache/shared-results.ts";
import { RedisLink } from "../../src/redis/link.ts";
import { redisServer } from "../support/redis-server.ts";

const SECOND = 1000;
const DASHBOARD: CachePolicy = { ttlSeconds: 900, warmingSeconds: 300 };

const redis = redisServer();

const opened: Array<{ cache: ResultCache; link: RedisLink }> = [];
afterEach(async () => {
  vi.useRealTimers();
  linkWarnings = 0;
  for (const { cache, link } of opened.splice(0)) {
    cache.close();
    await link.close();
  }
});

let prefixes = 0;
/** Links that went down (a warning each): none should, unless a test stops Redis. */
let linkWarnings = 0;
/** `count` replicas on one Redis namespace of their own (a fresh one per test). */
async function replicas(
  count: number,
  clock: { ms: number },
  options: SharedResultsOptions = {},
  /** The data identity of each replica; default: none (all alike). */
  identities: string[] = [],
): Promise<Array<{ cache: ResultCache; link: RedisLink }>> {
  const prefix = `test-${process.pid}-${++prefixes}:`;
  const made = [];
  for (let i = 0; i < count; i++) {
    const link = new RedisLink({
      url: redis.url,
      prefix,
      // Generous: this machine is shared, and a test about sharing must not see Redis as slow.
      timeoutMs: 1_000,
      logger: { info: () => {}, warn: () => linkWarnings++ },
    });
    expect(await link.waitUntilUp(5_000)).toBe(true);
    const cache = new ResultCache({
      maxEntries: 1_000,
      maxBytes: 10_000_000,
      now: () => clock.ms,
      shared: new SharedResults(link, { ...options, dataIdentity: identities[i] }),
    });
    made.push({ cache, link });
  }
  opened.push(...made);
  return made;
}

/** An engine shared by the replicas: counts the loads per key; `hold` keeps them waiting. */
function engine() {
  const counts = new Map<string, number>();
  const waiting: Array<() => void> = [];
  const state = { hold: false };
  const loaderFor = (key: string) => async (): Promise<Payload> => {
    const call = (counts.get(key) ?? 0) + 1;
    counts.set(key, call);
    // Answers from another turn of the event loop, as a real engine does.
    await new Promise((resolve) => setImmediate(resolve));
    if (state.hold) await new Promise<void>((resolve) => waiting.push(resolve));
    return { body: JSON.stringify({ key, call }), headers: { "content-type": "application/json" } };
  };
  const total = () => [...counts.values()].reduce((sum, n) => sum + n, 0);
  return {
    counts,
    loaderFor,
    total,
    state,
    release: () => {
      for (const go of waiting.splice(0)) go();
    },
  };
}

describe("one cache for all replicas", () => {
  it("answers 200 concurrent cold requests spread over 3 replicas with one query", async () => {
    const clock = { ms: 1_000_000 };
    const three = await replicas(3, clock);
    const queries = engine();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        three[i % 3]?.cache.get("k", DASHBOARD, queries.loaderFor("k")),
      ),
    );
    expect(queries.total()).toBe(1);
    expect(new Set(answers.map((answer) => answer?.etag)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer?.payload.body)).size).toBe(1);
  });

  it("makes a value computed by one replica a HIT on the others, with its ETag and Age", async () => {
    const clock = { ms: 1_000_000 };
    const [a, b, c] = await replicas(3, clock);
    const queries = engine();
    const miss = await a?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    expect(miss?.status).toBe("MISS");
    clock.ms += 42 * SECOND;
    for (const replica of [b, c]) {
      const hit = await replica?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
      expect(hit).toMatchObject({ status: "HIT", ageSeconds: 42, etag: miss?.etag });
      expect(hit?.payload.body).toBe(miss?.payload.body);
    }
    expect(queries.total()).toBe(1);
    expect(b?.cache.stats()).toMatchObject({ hits: 1, misses: 0 });
  });

  it("never serves a local copy more than a second older than the shared value", async () => {
    const clock = { ms: 1_000_000 };
    const [a, b] = await replicas(2, clock);
    const queries = engine();
    const first = await a?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    // b takes its copy from Redis at 0 s: compared then, not again before 1 s.
    await b?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    // A newer value reaches Redis at 0.5 s (as another replica's refresh would put it).
    const shared = new SharedResults(a?.link as RedisLink);
    clock.ms += SECOND / 2;
    const newer = { body: '{"newer":true}', headers: {} };
    const etag = strongEtag(newer.body, newer.headers);
    await shared.put("k", { payload: newer, etag, computedAt: clock.ms }, 900 * SECOND);

    clock.ms += SECOND / 2 - 1;
    const within = await b?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    expect(within?.etag).toBe(first?.etag);
    clock.ms += 1;
    const after = await b?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    expect(after).toMatchObject({ status: "HIT", etag, ageSeconds: 0 });
    expect(after?.payload.body).toBe(newer.body);
    expect(queries.total()).toBe(1);
  });
});

describe("recomputations a caller asks for, across replicas", () => {
  it("a no-cache on one replica joins the recomputation another is running: never a second query", async () => {
    const clock = { ms: 1_000_000 };
    const [a, b] = await replicas(2, clock);
    const queries = engine();
    await a?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    clock.ms += 30 * SECOND;
    const noCache = { maxAgeSeconds: 0, mayRecompute: async () => true };
    queries.state.hold = true;
    const first = a?.cache.get("k", DASHBOARD, queries.loaderFor("k"), undefined, noCache);
    await vi.waitFor(() => expect(queries.total()).toBe(2));
    // The second caller asks a moment after the recomputation began.
    clock.ms += 5;
    const second = b?.cache.get("k", DASHBOARD, queries.loaderFor("k"), undefined, noCache);
    // Time for b to reach Redis and find the recomputation running: 50 ms was too little once
    // with the suite's files beside each other (b arrived after it ended, and queried again).
    await new Promise((resolve) => setTimeout(resolve, 500));
    queries.state.hold = false;
    queries.release();
    const [one, two] = await Promise.all([first, second]);
    expect(queries.total()).toBe(2);
    expect(two?.etag).toBe(one?.etag);
  });
});

describe("fields in Redis that no replica wrote", () => {
  it("are taken as none by the scripts, so the link stays up, and a bad value is deleted and reported once", async () => {
    const clock = { ms: 1_000_000 };
    const [replica] = await replicas(1, clock);
    const { client } = (replica as { link: RedisLink }).link;
    const hashed = createHash("sha256").update("k").digest("base64url");
    const warnings: unknown[] = [];
    const shared = new SharedResults((replica as { link: RedisLink }).link, {
      now: () => clock.ms,
      logger: { warn: (fields) => warnings.push(fields) },
    });

    await client.hset(`uses:${hashed}`, { last: "later", previous: "never" });
    const uses = await shared.reportUses("k", { last: clock.ms, previous: -1 }, 900 * SECOND);
    expect(uses).toEqual({ last: clock.ms, previous: Number.NEGATIVE_INFINITY });

    const payload = { body: "{}", headers: {} };
    const etag = strongEtag(payload.body, payload.headers);
    await client.hset(`result:${hashed}`, { ...payload, headers: "{}", etag, computedAt: "soon" });
    const reads = await Promise.all([
      shared.newer("k", clock.ms),
      shared.get("k"),
      shared.get("k"),
    ]);
    expect(reads).toEqual(["absent", undefined, undefined]);
    expect(await client.exists(`result:${hashed}`)).toBe(0);
    expect(warnings).toEqual([
      { entry: expect.any(String), problem: "a computedAt that is not a time" },
    ]);

    // A value is stored over a computedAt that is not a number.
    await client.hset(`result:${hashed}`, { computedAt: "soon" });
    await shared.put("k", { payload, etag, computedAt: clock.ms }, 900 * SECOND);
    expect(await shared.get("k")).toEqual({ payload, etag, computedAt: clock.ms });
    expect(replica?.link.up).toBe(true);
    expect(linkWarnings).toBe(0);
  });
});

describe("data identity", () => {
  it("shares values only between replicas that serve the same data", async () => {
    const clock = { ms: 1_000_000 };
    const [a, b, c] = await replicas(3, clock, {}, ["exports-1", "exports-1", "exports-2"]);
    const queries = engine();
    await a?.cache.get("k", DASHBOARD, queries.loaderFor("k"));
    expect((await b?.cache.get("k", DASHBOARD, queries.loaderFor("k")))?.status).toBe("HIT");
    expect((await c?.cache.get("k", DASHBOARD, queries.loaderFor("k")))?.status).toBe("MISS");
    expect(queries.total()).toBe(2);
  });
});

describe("single flight across replicas", () => {
  it("lets another replica answer once the lock holder dies mid-query, within the lock's expiry", async () => {
    const clock = { ms: 1_000_000 };
    const [holder, other] = await replicas(2, clock, { lockMs: 600 });
    const stuck = engine();
    stuck.state.hold = true; // the holder's engine never answers
    void holder?.cache.get("k", DASHBOARD, stuck.loaderFor("k")).catch(() => {});
    await vi.waitFor(() => expect(stuck.total()).toBe(1), { timeout: 10_000 });

    const healthy = engine();
    const waiting = other?.cache.get("k", DASHBOARD, healthy.loaderFor("k"));
    // The holder dies: its connection goes, so it neither extends nor releases the lock.
    holder?.link.client.disconnect();
    const answer = await waiting;
    expect(answer).toMatchObject({ status: "MISS" });
    expect(healthy.total()).toBe(1);
    stuck.release();
  });

  it("answers 504 engine_timeout to a waiter whose holder outlives the engine's timeout", async () => {
    const clock = { ms: 1_000_000 };
    const [holder, other] = await replicas(2, clock, { waitMs: 300 });
    const stuck = engine();
    stuck.state.hold = true;
    void holder?.cache.get("k", DASHBOARD, stuck.loaderFor("k")).catch(() => {});
    await vi.waitFor(() => expect(stuck.total()).toBe(1), { timeout: 10_000 });
    await expect(other?.cache.get("k", DASHBOARD, engine().loaderFor("k"))).rejects.toMatchObject({
      code: "engine_timeout",
    });
    stuck.release();
  });
});

describe("warming across replicas", () => {
  /** Moves the shared clock and the caches' timers, letting refreshes (real Redis I/O) settle. */
  async function advance(clock: { ms: number }, ms: number) {
    clock.ms += ms;
    await vi.advanceTimersByTimeAsync(ms);
  }

  it("an hour of 100 dashboards polling 10 keys every 10 s over 3 replicas: no miss after warm-up, ≤ 13 queries a key", async () => {
    const clock = { ms: 1_000_000 };
    const three = await replicas(3, clock);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const queries = engine();
    const keys = Array.from({ length: 10 }, (_, i) => `key-${i}`);
    const statuses: Record<CacheStatus, number> = { HIT: 0, MISS: 0, STALE: 0, REFRESH: 0 };
    let warmupMisses = 0;
    let request = 0;
    const stepMs = (10 * SECOND) / 100;
    for (let at = 0; at < 3600 * SECOND; at += stepMs) {
      // A refresh is real Redis I/O and may still run at the next polls: those are STALE, not MISS.
      if (at > 0) await advance(clock, stepMs);
      // Lets Redis's replies in (the I/O phase), as a server's event loop would between requests.
      await new Promise((resolve) => setImmediate(resolve));
      const answers = await Promise.all(
        keys.map((key) => three[request++ % 3]?.cache.get(key, DASHBOARD, queries.loaderFor(key))),
      );
      for (const answer of answers) {
        const status = answer?.status ?? "MISS";
        if (at < 10 * SECOND) warmupMisses += status === "MISS" ? 1 : 0;
        else statuses[status]++;
      }
    }
    expect(three.map(({ link }) => link.up)).toEqual([true, true, true]);
    expect(linkWarnings).toBe(0);
    expect(warmupMisses).toBe(10);
    expect(statuses.MISS).toBe(0);
    for (const key of keys) expect(queries.counts.get(key)).toBeLessThanOrEqual(13);
  }, 120_000);
});
