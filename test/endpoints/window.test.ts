// The window the engine binds, as each built-in endpoint declares it: always a concrete start, the
// tightest of the bounds given.
import { describe, expect, it } from "vitest";
import { NO_WINDOW } from "../../src/endpoints/window.ts";
import { endpointNamed } from "../support/catalog.ts";
import { micros } from "../support/fixtures.ts";

const NOW = micros("2026-11-21T05:17:42.123456Z");
const NO_END = "9999-12-31T23:59:59.999999Z";
const logs = (params: Record<string, string | null>) => {
  const { window_start, window_end } = endpointNamed("logs.all").window(params, NOW);
  return [window_start, window_end];
};

describe("logs.all's window", () => {
  it("starts at the tier's retention edge when the caller gives no start, and has no end", () => {
    expect(logs({ project_tier: null })).toEqual(["2026-11-20T05:17:42.123456Z", NO_END]);
    expect(logs({ project_tier: "pro" })).toEqual(["2026-11-20T05:17:42.123456Z", NO_END]);
    expect(logs({ project_tier: "PRO" })).toEqual(["2026-11-14T05:17:42.123456Z", NO_END]);
    expect(logs({ project_tier: "PAYG" })).toEqual(["2026-08-23T05:17:42.123456Z", NO_END]);
  });

  it("is the tightest of retention, the range, a cursor and a resumed stream's position", () => {
    const range = {
      project_tier: "PRO",
      iso_timestamp_start: "2026-11-01T00:00:00.000000Z",
      iso_timestamp_end: "2026-11-21T01:00:00.000000Z",
    };
    expect(logs(range)).toEqual(["2026-11-14T05:17:42.123456Z", "2026-11-21T01:00:00.000000Z"]);
    const later = { ...range, iso_timestamp_start: "2026-11-20T00:00:00.000000Z" };
    expect(logs({ ...later, cursor_timestamp: "2026-11-20T12:00:00.000000Z" })).toEqual([
      "2026-11-20T00:00:00.000000Z",
      "2026-11-20T12:00:00.000000Z",
    ]);
    // From a position on (inclusive): the exclusive start is a microsecond before it.
    expect(logs({ ...later, after_timestamp: "2026-11-20T06:00:00.000000Z" })[0]).toBe(
      "2026-11-20T05:59:59.999999Z",
    );
  });
});

it("starts the stats at their first bucket and usage at now minus its window", () => {
  const stats = (interval: string) =>
    endpointNamed("functions.invocation-stats").window({ interval }, NOW);
  expect(stats("5min")).toMatchObject({
    window_start: "2026-11-21T05:12:42.000000Z",
    last_bucket: "2026-11-21T05:17:42.000000Z",
  });
  expect(stats("7day")).toMatchObject({
    window_start: "2026-11-14T00:00:00.000000Z",
    last_bucket: "2026-11-21T00:00:00.000000Z",
  });
  expect(stats("1day").window_start).toBe("2026-11-20T05:00:00.000000Z");
  expect(endpointNamed("usage.api-counts").window({ interval: "daily" }, NOW).window_start).toBe(
    "2026-11-14T05:17:42.123456Z",
  );
  expect(NO_WINDOW({ x: "1" }, NOW)).toEqual({ x: "1" });
});
