// Picks and opens the configured engine: checks that BigQuery's source tables can be queried, or
// loads the data the embedded one serves.
// Each engine's module is imported only when chosen: neither pays for the other's startup.
import { createRequire } from "node:module";
import type { FastifyBaseLogger } from "fastify";
import type { BigQueryEngineOptions } from "./bigquery.ts";
import type { QueryEngine } from "./engine.ts";

/** The engine the configuration chooses, and how it is opened. */
export type BigQuerySettings = { kind: "bigquery" } & Pick<
  BigQueryEngineOptions,
  "projectId" | "dataset" | "location" | "apiEndpoint" | "jobTimeoutMs" | "maximumBytesBilled"
>;

export interface DuckDbSettings {
  kind: "duckdb";
  path?: string;
  /** DuckDB's memory limit, e.g. `4GB`; absent: DuckDB's default (80% of RAM). */
  memoryLimit?: string;
  localData?: string;
  /** How often LOCAL_DATA is looked at for new files; absent: every 30 s. */
  localDataPollSeconds?: number;
  /** Absent: demo data only when there is no other data. */
  demoData?: boolean;
  /** How often live demo rows arrive; absent: every 5 s. */
  demoIntervalSeconds?: number;
  /** A query still running after this long is interrupted (504 engine_timeout). */
  timeoutMs: number;
}

export async function openEngine(
  settings: BigQuerySettings | DuckDbSettings,
  log: FastifyBaseLogger,
): Promise<QueryEngine> {
  if (settings.kind === "bigquery") {
    const { createBigQueryEngine } = await import("./bigquery.ts");
    const { projectId, dataset, location } = settings;
    log.info({ engine: "bigquery", projectId, dataset, location }, "query engine: BigQuery");
    const engine = createBigQueryEngine(settings);
    // Wrong credentials or a missing table stop startup here, not every query after it.
    await engine.checkSources();
    return engine;
  }

  const { createDuckDbEngine } = await import("./duckdb.ts").catch(explainMissingBinding);
  const { keepLive, loadData } = await import("./duckdb/data.ts");
  const { localDataFolder } = await import("./duckdb/local-data.ts");
  const engine = await createDuckDbEngine({
    path: settings.path,
    timeoutMs: settings.timeoutMs,
    memoryLimit: settings.memoryLimit,
    // The demo data is made in SQL and a database file is open before the sandbox closes: only
    // LOCAL_DATA is read from disk.
    dataFolders: settings.localData === undefined ? [] : [localDataFolder(settings.localData)],
  });
  try {
    const data = await loadData(engine, {
      localData: settings.localData,
      demoData: settings.demoData,
    });
    log.info(
      {
        engine: "duckdb",
        database: settings.path ?? "in memory",
        data: data.source,
        files: data.files,
        rows: data.rows,
      },
      `query engine: embedded DuckDB serving ${
        {
          local: `the exports in ${settings.localData}`,
          demo: "generated demo logs",
          database: "the database file",
        }[data.source]
      }`,
    );
    const live = keepLive(engine, data, { ...settings, log });
    return {
      ...engine,
      ...(live?.loadedThrough && { loadedThrough: live.loadedThrough }),
      close: async () => {
        await live?.stop();
        await engine.close();
      },
    };
  } catch (error) {
    await engine.close();
    throw error;
  }
}

/**
 * DuckDB's native build for each platform is an optional package, which npm can leave out (a lockfile
 * made elsewhere, `--omit=optional`): say which package is missing and how to add it, not a stack.
 */
function explainMissingBinding(error: unknown): never {
  const missing = /Cannot find module '(@duckdb\/node-bindings-[\w-]+)/.exec(String(error))?.[1];
  if (!missing) throw error;
  const { version } = createRequire(import.meta.url)("@duckdb/node-bindings/package.json");
  throw new Error(
    `DuckDB's native build for ${process.platform}-${process.arch} is not installed (package ${missing}); install it with: npm install --no-save ${missing}@${version}`,
  );
}
