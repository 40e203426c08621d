// Watchers on three replicas sharing a real redis-server, over real HTTP, on one BigQuery stand-in
// whose data the test changes: they cost the engine what one poller does, each sees every change
// once, and a value one replica refreshes reaches the others' watchers within a second.
//
// Time: the caches read the test's clock, and only setTimeout and clearTimeout are faked (the
// cache's warming and watch timers); sockets, the stand-in and Redis keep real time.
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import { functionCall, MINUTE, PROJECT, shift } from "../support/fixtures.ts";
import { openOverHttp, type Stream } from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { redisServer } from "../support/redis-server.ts";
import { API_KEY } from "../support/service.ts";
import { replicasOnStandIn } from "../support/standin-replicas.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const STATS_QUERY = `project=${PROJECT}&interval=1hr`;
const STATS = `/api/endpoints/functions.invocation-stats?${STATS_QUERY}`;
const WATCH = `/api/endpoints/functions.invocation-stats/watch?${STATS_QUERY}`;
const SECOND = 1000;
const calls = (count: number): Row[] =>
  Array.from({ length: count }, (_, i) => functionCall(shift(NOW, -BigInt(i + 1) * MINUTE)));

const redis = redisServer();
afterEach(() => {
  vi.useRealTimers();
});

/** Three replicas on one invocation, the test's clock for their caches. */
async function replicas(clock: { ms: number }) {
  const set = await replicasOnStandIn({
    redisUrl: redis.url,
    now: NOW,
    clock,
    tables: { function_edge_logs: calls(1) },
  });
  return { ...set, setCalls: (count: number) => set.setTable("function_edge_logs", calls(count)) };
}

const results = (stream: Stream) => stream.events.filter((event) => event.event === "result");

/**
 * Moves the caches' clock and timers together, 10 s at a time, giving Redis and the engine real time
 * to answer after each step, as ten real seconds would.
 */
async function advance(clock: { ms: number }, ms: number, each?: () => Promise<void>) {
  for (let moved = 0; moved < ms; moved += 10 * SECOND) {
    clock.ms += 10 * SECOND;
    await vi.advanceTimersByTimeAsync(10 * SECOND);
    await sleep(20);
    await each?.();
  }
}

/** Data changes at these minutes of the hour: the new count of invocations. */
const CHANGES = new Map([
  [7, 2],
  [22, 3],
  [37, 4],
  [52, 5],
]);

/** An hour in 10 s steps, the data changing at CHANGES; `each` runs after every step. */
async function anHour(
  clock: { ms: number },
  setCalls: (count: number) => void,
  queries: { runs: number; settled: number },
  each?: () => Promise<void>,
) {
  for (let minute = 1; minute <= 60; minute++) {
    await advance(clock, 60 * SECOND, each);
    const count = CHANGES.get(minute);
    if (count !== undefined) setCalls(count);
    await vi.waitFor(() => expect(queries.settled).toBe(queries.runs));
  }
}

describe("watchers across replicas", () => {
  it("50 watchers over 3 replicas cost the queries of one poller over an hour, and each sees every change once", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    // One dashboard polling every 10 s through the load balancer: the baseline.
    const pollClock = { ms: 1_000_000 };
    const polled = await replicas(pollClock);
    let poll = 0;
    const pollOnce = async () => {
      const base = polled.bases[poll++ % 3];
      const answer = await fetch(`${base}${STATS}`, { headers: { "x-api-key": API_KEY } });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    };
    await pollOnce();
    await anHour(pollClock, polled.setCalls, polled.queries, pollOnce);

    const watchClock = { ms: 50_000_000 };
    const watched = await replicas(watchClock);
    const watchers: Stream[] = [];
    for (let i = 0; i < 50; i++) {
      watchers.push(await openOverHttp(`${watched.bases[i % 3]}${WATCH}`));
    }
    for (const watcher of watchers) await watcher.until(() => results(watcher).length === 1);
    await anHour(watchClock, watched.setCalls, watched.queries);

    // No more than the poller; and warmed all along: the first answer, then one a warming interval.
    // The next refresh is due a warming interval after a value was computed, on the caches' clock:
    // a refresh that a loaded machine finishes a step late moves the rest 10 s on, and the hour's
    // last one, due at its very end, past it (12 seen in a fresh clone's run).
    expect(watched.queries.runs).toBeLessThanOrEqual(polled.queries.runs);
    expect(watched.queries.runs).toBeGreaterThanOrEqual(3600 / 300);
    // The first value and one per change, each refreshed within the warming interval after it.
    const seen = results(watchers[0] as Stream).map((event) => event.id);
    expect(seen).toHaveLength(1 + CHANGES.size);
    expect(new Set(seen).size).toBe(seen.length);
    for (const watcher of watchers) expect(results(watcher).map((event) => event.id)).toEqual(seen);
  }, 240_000);

  it("a value one replica refreshed reaches a watcher on another within a second", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const clock = { ms: 1_000_000 };
    const { bases, setCalls } = await replicas(clock);
    const watcher = await openOverHttp(`${bases[1]}${WATCH}`);
    await watcher.until(() => results(watcher).length === 1);

    setCalls(3);
    clock.ms += SECOND;
    const refreshed = await fetch(`${bases[0]}${STATS}`, {
      headers: { "x-api-key": API_KEY, "cache-control": "no-cache" },
    });
    const etag = refreshed.headers.get("etag");
    await refreshed.arrayBuffer();
    // No timer of the watching replica has run since: the value is not there yet.
    expect(results(watcher)).toHaveLength(1);
    clock.ms += SECOND;
    await vi.advanceTimersByTimeAsync(SECOND);
    await watcher.until(() => results(watcher).length === 2);
    expect(results(watcher)[1]?.id).toBe(etag);
  });
});
