// The whole service as a test sees it, over fixture tables and a pinned clock: serviceApp on the
// embedded DuckDB engine (startService), or on the BigQuery engine → official client → HTTP →
// stand-in → GoogleSQL reference engine (startBigQueryService), for what only that path has: the
// jobs it sends, the faults BigQuery answers with, its result pages. Route tests run on the first;
// each surface keeps a test on the second, and test/sql/ holds the BigQuery SQL itself.
import type { FastifyBaseLogger, FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterEach, expect, inject } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { type BigQueryEngineOptions, createBigQueryEngine } from "../../src/engines/bigquery.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { type BigQueryStandIn, startBigQueryStandIn } from "./bigquery-standin.ts";
import { type ConfigOverrides, configFrom } from "./config-from.ts";
import { servedContract } from "./contract.ts";
import { replaceTables } from "./duckdb-tables.ts";
import { micros } from "./fixtures.ts";
import type { Row } from "./googlesql.ts";

export const API_KEY = "test-key-0123456789abcdef";

export interface ServiceOptions extends Partial<Omit<AppDeps, "engine">> {
  /** Settings other than the defaults; the full-access key is API_KEY unless `auth` says. */
  config?: ConfigOverrides;
  tables?: Record<string, Row[]>;
  now: string;
  /** Wraps the real engine, e.g. to count calls or inject a fault it cannot produce. */
  wrapEngine?: (engine: QueryEngine) => QueryEngine;
  logger?: FastifyBaseLogger;
}

export interface BigQueryServiceOptions extends ServiceOptions {
  engine?: Partial<BigQueryEngineOptions>;
}

export interface Service {
  app: FastifyInstance;
  /**
   * GET with the test key unless `headers` set X-API-KEY or Authorization themselves; an answer on
   * a path /openapi.json lists fails the test unless the document describes it (with the catalog's
   * own queries).
   */
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
}

export interface BigQueryService extends Service {
  standIn: BigQueryStandIn;
}

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

/** A stand-in over `tables` at `now`, and the BigQuery engine that queries it; close both after use. */
export async function standInEngine(
  options: Pick<BigQueryServiceOptions, "tables" | "now" | "engine">,
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

/** Starts a service on the embedded engine for the current test; it is closed after the test. */
export async function startService(options: ServiceOptions): Promise<Service> {
  const { tables = {}, now, ...rest } = options;
  const engine = await createDuckDbEngine({ now: () => micros(now) });
  await replaceTables(engine, tables);
  return serve(engine, rest);
}

/** Starts a service on the BigQuery stand-in for the current test; it is closed after the test. */
export async function startBigQueryService(
  options: BigQueryServiceOptions,
): Promise<BigQueryService> {
  const { tables, now, engine: engineOptions, config, ...rest } = options;
  const { standIn, engine } = await standInEngine({ tables, now, engine: engineOptions });
  const service = await serve(
    engine,
    {
      ...rest,
      // The engine's own job timeout (`engine` above) bounds a query, not the embedded engine's default.
      config: { ...config, admission: { timeoutMs: undefined, ...config?.admission } },
    },
    () => standIn.close(),
  );
  return { ...service, standIn };
}

/** The app over `engine`, closed after the test: the app, the engine, then what `closeUnder` closes. */
async function serve(
  engine: QueryEngine,
  options: Omit<ServiceOptions, "tables" | "now">,
  closeUnder: () => Promise<void> = async () => {},
): Promise<Service> {
  const { wrapEngine = (e) => e, config, ...deps } = options;
  const app = await serviceApp(
    configFrom({ ...config, auth: { apiKeys: [API_KEY], ...config?.auth } }),
    { ...deps, engine: wrapEngine(engine) },
  );
  open.push(async () => {
    await app.close();
    await engine.close();
    await closeUnder();
  });
  // A catalog of its own may answer rows the built-in one does not declare.
  const held = deps.catalog === undefined;
  const hasKey = (headers: Record<string, string>) =>
    Object.keys(headers).some((name) =>
      ["x-api-key", "authorization"].includes(name.toLowerCase()),
    );
  return {
    app,
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
