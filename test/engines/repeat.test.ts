// Background work on a timer (the live-export watch, the demo feed): one failed run must not stop
// the runs after it.
import { afterEach, describe, expect, it, vi } from "vitest";
import { repeat } from "../../src/engines/duckdb/repeat.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("repeat", () => {
  it("runs again after a run that failed, and reports each failure once", async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let runs = 0;
    const repeated = repeat(
      1_000,
      async () => {
        runs++;
        if (runs === 1) throw new Error("export folder unreadable");
      },
      (error) => errors.push(error),
    );
    for (let tick = 0; tick < 3; tick++) await vi.advanceTimersByTimeAsync(1_000);
    expect(runs).toBe(3);
    expect(errors).toHaveLength(1);
    await repeated.stop();
  });

  it("runs nothing after stop", async () => {
    vi.useFakeTimers();
    let runs = 0;
    const repeated = repeat(
      1_000,
      async () => void runs++,
      () => {},
    );
    await repeated.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    await repeated.run();
    expect(runs).toBe(0);
  });
});
