// One credential floods the engine with the costliest patterns the validator accepts; another
// credential's light query keeps answering quickly (real DuckDB, demo data, 2 running at once).
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
  it("leaves another credential's light query under 1 s at the median", async () => {
    const patterns = floodPatterns(60);
    expect(patterns).toHaveLength(60);
    const flood = Promise.all(
      patterns.map((pattern) =>
        get(
          `/api/endpoints/usage.api-counts?interval=daily&project=${encodeURIComponent(pattern)}`,
          FLOOD_KEY,
        ),
      ),
    );
    const light: number[] = [];
    for (let i = 0; i < 7; i++) {
      const started = performance.now();
      const response = await get(
        `/api/endpoints/logs.all?project=default&project_tier=PRO&iso_timestamp_end=${new Date(Date.now() - i * 1000).toISOString()}`,
        DASHBOARD_KEY,
      );
      expect(response.statusCode).toBe(200);
      light.push(performance.now() - started);
    }
    const statuses = (await flood).map((response) => response.statusCode);
    // The flood was real: its share let most of it queue, and what was refused was refused at once.
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(40);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    light.sort((a, b) => a - b);
    expect(light[3]).toBeLessThan(1_000);
  }, 120_000);
});
