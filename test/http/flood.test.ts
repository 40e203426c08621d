// One credential floods the engine with the costliest patterns the validator accepts; another
// credential's light queries are admitted in turn with it, not behind its queue (real DuckDB, demo
// data, 2 running at once).
import { describe, expect, it } from "vitest";
import { demoApp } from "../support/demo-app.ts";
import { floodPatterns } from "../support/flood.ts";

const FLOOD_KEY = "flood-key-0123456789abcdef";
const DASHBOARD_KEY = "dashboard-key-0123456789ab";

const demo = demoApp(
  {
    auth: { apiKeys: [FLOOD_KEY, DASHBOARD_KEY] },
    rateLimitPerMinute: 10_000,
    cache: { maxEntries: 1000, maxBytes: 1e8 },
    admission: { maxConcurrency: 2, maxQueue: 100, timeoutMs: 30_000 },
  },
  { cache: {} },
);

const get = (url: string, key: string) => demo.app.inject({ url, headers: { "x-api-key": key } });

describe("a flood of costly patterns from one credential", () => {
  it("lets another credential's light queries in ahead of the flood's queue", async () => {
    const patterns = floodPatterns(60);
    expect(patterns).toHaveLength(60);
    let floodAnswered = 0;
    const flood = Promise.all(
      patterns.map(async (pattern) => {
        const response = await get(
          `/api/endpoints/usage.api-counts?interval=daily&project=${encodeURIComponent(pattern)}`,
          FLOOD_KEY,
        );
        if (response.statusCode === 200) floodAnswered++;
        return response;
      }),
    );
    // How many of the flood's queries were answered while each light query was out: in turn with
    // the flood, a light query waits for a slot (2 run at once), never for the flood's queue.
    const floodAnsweredDuring: number[] = [];
    for (let i = 0; i < 7; i++) {
      const sent = floodAnswered;
      const response = await get(
        `/api/endpoints/logs.all?project=default&project_tier=PRO&iso_timestamp_end=${new Date(Date.now() - i * 1000).toISOString()}`,
        DASHBOARD_KEY,
      );
      expect(response.statusCode).toBe(200);
      floodAnsweredDuring.push(floodAnswered - sent);
    }
    const statuses = (await flood).map((response) => response.statusCode);
    // The flood was real: its share let most of it queue, and what was refused was refused at once.
    const queued = statuses.filter((status) => status === 200).length;
    expect(queued).toBeGreaterThan(40);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    // A few of the flood's queries per light query (the slot the light one waits for, and what the
    // other slot ran meanwhile: more when a loaded machine slows the light one), far from the 40
    // and more a queue in arrival order puts first.
    floodAnsweredDuring.forEach((answered, i) => {
      expect(answered, `flood queries answered during light query ${i}`).toBeLessThanOrEqual(10);
    });
  }, 120_000);
});
