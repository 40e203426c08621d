// The whole service as a test sees it: buildApp → BigQuery engine → official client → HTTP →
// stand-in → GoogleSQL reference engine, over fixture tables and a pinned clock.
import type { FastifyBaseLogger, FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterEach, expect, inject } from "vitest";
import { type AppDeps, buildApp } from "../../src/app.ts";
import { type BigQueryEngineOptions, createBigQueryEngine } from "../../src/engines/bigquery.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { type BigQueryStandIn, startBigQueryStandIn } from "./bigquery-standin.ts";
import { type ConfigOverrides, configFrom } from "./config-from.ts";
import { servedContract } from "./contract.ts";
import type { Row } from "./googlesql.ts";

export const API_KEY = "test-key-0123456789abcdef";

export interface ServiceOptions extends Partial<Omit<AppDeps, "engine">> {
  /** Settings other than the defaults; the full-access key is API_KEY unless `auth` says. */
  config?: ConfigOverrides;
  tables?: Record<string, Row[]>;
  now: string;
  engine?: Partial<BigQueryEngineOptions>;
  /** Wraps the real engine, e.g. to count calls or inject a fault it cannot produce. */
  wrapEngine?: (engine: QueryEngine) => QueryEngine;
  logger?: FastifyBaseLogger;
}

export interface Service {
  app: FastifyInstance;
  standIn: BigQueryStandIn;
  /**
   * GET with the test key unless `headers` set X-API-KEY or Authorization themselves; an answer on
   * a path /openapi.json lists fails the test unless the document describes it (with the catalog's
   * own queries).
   */
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
}

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

/** A stand-in over `tables` at `now`, and the BigQuery engine that queries it; close both after use. */
export async function standInEngine(
  options: Pick<ServiceOptions, "tables" | "now" | "engine">,
): Promise<{ standIn: BigQueryStandIn; engine: QueryEngine }> {
  const standIn = await startBigQueryStandIn({
    googleSqlPort: inject("googleSqlPort"),
    tables: options.tables,
    now: options.now,
  });
  const engine = engineOn(standIn, {
    retry: { attempts: 2, initialDelayMs: 1, maxDelayMs: 1 },
    ...options.engine,
  });
  return { standIn, engine };
}

/** The service's BigQuery engine on `standIn`, its windows bound from the stand-in's clock. */
export function engineOn(standIn: BigQueryStandIn, options: Partial<BigQueryEngineOptions> = {}) {
  return createBigQueryEngine({
    projectId: "test-project",
    dataset: "logs",
    apiEndpoint: standIn.url,
    now: standIn.clock,
    jobTimeoutMs: 10_000,
    ...options,
  });
}

/** Starts a service for the current test; it is closed after the test. */
export async function startService(options: ServiceOptions): Promise<Service> {
  const { tables, now, engine: engineOptions, wrapEngine = (e) => e, config, ...deps } = options;
  const { standIn, engine } = await standInEngine({ tables, now, engine: engineOptions });
  const app = await buildApp(
    configFrom({
      ...config,
      auth: { apiKeys: [API_KEY], ...config?.auth },
      // The engine's own job timeout (`engine` above) bounds a query, not the embedded engine's default.
      admission: { timeoutMs: undefined, ...config?.admission },
    }),
    { ...deps, engine: wrapEngine(engine) },
  );
  open.push(async () => {
    await app.close();
    await engine.close();
    await standIn.close();
  });
  // A catalog of its own may answer rows the built-in one does not declare.
  const held = deps.catalog === undefined;
  const hasKey = (headers: Record<string, string>) =>
    Object.keys(headers).some((name) =>
      ["x-api-key", "authorization"].includes(name.toLowerCase()),
    );
  return {
    app,
    standIn,
    get: async (url, headers = {}) => {
      const answer = await app.inject({
        method: "GET",
        url,
        headers: hasKey(headers) ? headers : { "x-api-key": API_KEY, ...headers },
      });
      if (held) expect((await servedContract(app))(url, answer), `GET ${url}`).toEqual([]);
      return answer;
    },
  };
}
