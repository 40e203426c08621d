// Follow feeds poll from one timer, each at a phase of its own drawn at random: feeds opened
// together spread their polls over the interval instead of querying the engine at one instant.
import { afterEach, describe, expect, it, vi } from "vitest";
import { cursorCodec } from "../../src/endpoints/cursor.ts";
import { FollowHub } from "../../src/endpoints/follow.ts";
import type { QueryEngine, QueryRequest } from "../../src/engines/engine.ts";
import { catalog } from "../support/catalog.ts";

const LOGS = catalog.find((endpoint) => endpoint.name === "logs.all");
const INTERVAL_MS = 1_000;

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("follow feeds' polls", () => {
  it("are spread over the interval, one phase drawn at random per feed", async () => {
    vi.useFakeTimers();
    // Ten phases, one in each tenth of the interval.
    const phases = Array.from({ length: 10 }, (_, i) => (i + 0.5) / 10);
    vi.spyOn(Math, "random").mockImplementation(() => phases.shift() ?? 0);
    const polls: QueryRequest[] = [];
    const engine: QueryEngine = {
      dialect: "duckdb",
      ping: async () => {},
      close: async () => {},
      run: async (request) => {
        polls.push(request);
        return { rows: [], truncated: false };
      },
    };
    const hub = new FollowHub(engine, {
      intervalMs: INTERVAL_MS,
      lagMs: 60_000,
      cursors: cursorCodec("secret-of-this-test-0123456789ab"),
    });
    const follower = {
      credential: "c",
      deliver: () => true,
      ready: async () => {},
      fail: () => {},
    };
    for (let feed = 0; feed < 10; feed++) {
      const params = { project: `project-${feed}`, project_tier: "FREE" };
      hub.follow(LOGS as NonNullable<typeof LOGS>, params, undefined, follower);
    }
    const perTenth: number[] = [];
    for (let tenth = 0; tenth < 10; tenth++) {
      const before = polls.length;
      await vi.advanceTimersByTimeAsync(INTERVAL_MS / 10);
      perTenth.push(polls.length - before);
    }
    expect(perTenth).toEqual(Array(10).fill(1));
    // The next interval: each again at its own phase.
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(polls).toHaveLength(20);
    hub.close();
  });
});
