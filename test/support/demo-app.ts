// The service on the embedded engine over generated demo data, built once per test file (demo data
// takes a moment) and closed after it.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { type ConfigOverrides, configFrom } from "./config-from.ts";

export interface DemoApp {
  app: FastifyInstance;
  engine: DuckDbEngine;
}

/**
 * Registers the file's beforeAll/afterAll; the returned object is filled in before the tests run.
 * `over` gives the engine the app runs on, made of the embedded one (a test's slow query).
 */
export function demoApp(
  config: ConfigOverrides,
  deps: Omit<AppDeps, "engine"> = {},
  over: (engine: DuckDbEngine) => QueryEngine = (engine) => engine,
): DemoApp {
  const demo = {} as DemoApp;
  beforeAll(async () => {
    demo.engine = await createDuckDbEngine();
    await loadData(demo.engine, { demoData: true });
    demo.app = await serviceApp(configFrom(config), { engine: over(demo.engine), ...deps });
  }, 60_000);
  afterAll(async () => {
    await demo.app?.close();
    await demo.engine?.close();
  });
  return demo;
}
