// Under load, on the real embedded engine: deadlines hold for queued and running queries alike,
// and the gate answers what it cannot take at once.
import { afterEach, describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import { withQuery } from "../support/catalog.ts";
import { configFrom } from "../support/config-from.ts";

const KEY = "load-test-key-0123456789";
// Several seconds of CPU per query on this machine kind, interruptible like any DuckDB scan.
const HEAVY_SQL =
  "SELECT count(*) AS n FROM range(5000000000) t(i) WHERE hash(i + length(CAST($project AS VARCHAR))) % 7 = 3";

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

/** The service on an empty embedded database whose logs.all is a heavy query. */
async function heavyService(timeoutMs: number, shutdownGraceMs?: number) {
  const engine = await createDuckDbEngine();
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [KEY] },
      admission: { maxConcurrency: 2, maxQueue: 20, maxPerCredential: 20, timeoutMs },
      ...(shutdownGraceMs !== undefined && { shutdownGraceMs }),
    }),
    { engine, catalog: withQuery("logs.all", "duckdb", HEAVY_SQL) },
  );
  closing.push(async () => {
    await app.close();
    await engine.close();
  });
  const get = async (project: string) => {
    const response = await app.inject({
      url: `/api/endpoints/logs.all?project=${project}&project_tier=FREE`,
      headers: { "x-api-key": KEY },
    });
    return { status: response.statusCode, body: response.json() };
  };
  return { app, get };
}

describe("deadlines under load", () => {
  // Each heavy query would run for seconds: every answer being the deadline's 504 is the deadline
  // holding, whatever the load on the machine makes of the wall-clock time.
  it("answers 12 concurrent heavy queries each at its deadline, queued ones unstarted", async () => {
    const { get } = await heavyService(500);
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => get(`p${i}`)));
    for (const { status, body } of answers) {
      expect(status).toBe(504);
      expect(body.error.code).toBe("engine_timeout");
    }
    // Two ran; the others waited. A slot freed just before a waiter's own deadline may start it.
    const messages = answers.map(({ body }) => body.error.message as string);
    expect(messages.filter((m) => m.includes("was not started")).length).toBeGreaterThanOrEqual(8);
    // Interrupted queries free their slots: a later one runs (and meets its own deadline). An
    // interrupt takes effect when DuckDB next checks for it, later on a loaded machine, so a query
    // asked at once may still wait its whole deadline; asking again shows the slots came back.
    await expect
      .poll(async () => (await get("after")).body.error.message)
      .not.toMatch(/not started/);
  });
});

describe("closing", () => {
  it("answers queued queries at once and running ones when the grace ends, both 503 shutting_down", async () => {
    const { app, get } = await heavyService(60_000, 1_500);
    const answers = Promise.all(Array.from({ length: 4 }, (_, i) => get(`p${i}`)));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The running two would run for seconds: close() resolves because the grace ends them.
    await app.close();
    for (const { status, body } of await answers) {
      expect(status).toBe(503);
      expect(body.error.code).toBe("shutting_down");
    }
  });
});
