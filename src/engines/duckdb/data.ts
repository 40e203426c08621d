// What the embedded engine serves, decided once at startup: the LOCAL_DATA exports, else demo logs
// (when asked, or when the database holds no rows), else what the DUCKDB_PATH file already holds.
import type { DuckDBConnection } from "@duckdb/node-api";
import type { FastifyBaseLogger } from "fastify";
import { sourceTables } from "../../schema.ts";
import { dateToMicros } from "../../time.ts";
import type { DuckDbEngine } from "../duckdb.ts";
import { DEMO_SIZE, generateLogs } from "./demo-data.ts";
import { feedDemoData } from "./demo-feed.ts";
import { clearRecords, createDerivedTables } from "./derived.ts";
import { watchExports } from "./export-watch.ts";
import { type LoadedFile, type LocalDataLoad, loadLocalData } from "./local-data.ts";
import { createTableSql, quoteIdent } from "./tables.ts";

export interface DataOptions {
  /** `LOCAL_DATA`: a folder or a glob of exports. */
  localData?: string;
  /** `DEMO_DATA`: true = always generate, false = never, absent = only when there is no other data. */
  demoData?: boolean;
  /**
   * The instant the data is read at, epoch µs: the demo data's anchor, when LOCAL_DATA is listed;
   * default: the system clock.
   */
  now?: bigint;
}

export interface LoadedData {
  source: "local" | "demo" | "database";
  /** The demo data's anchor (demo only). */
  anchor?: bigint;
  /** The files read (LOCAL_DATA only). */
  files: LoadedFile[];
  /** LOCAL_DATA only: when startup listed the exports, and whether it loaded every one listed. */
  listing?: Pick<LocalDataLoad, "listedAt" | "complete">;
  /** Rows per source table after loading. */
  rows: Record<string, number>;
}

export async function loadData(
  engine: DuckDbEngine,
  options: DataOptions = {},
): Promise<LoadedData> {
  const connection = await engine.connect();
  try {
    for (const table of sourceTables()) await connection.run(createTableSql(table));
    await createDerivedTables(connection);
    if (options.localData !== undefined) {
      const { files, ...listing } = await loadLocalData(connection, options.localData, options.now);
      return { source: "local", files, listing, rows: await rowCounts(connection) };
    }
    const existing = await rowCounts(connection);
    const empty = Object.values(existing).every((count) => count === 0);
    if (options.demoData === true || (options.demoData === undefined && empty)) {
      const anchor = options.now ?? dateToMicros(new Date());
      await replaceWithDemoData(connection, anchor);
      return { source: "demo", anchor, files: [], rows: await rowCounts(connection) };
    }
    return { source: "database", files: [], rows: existing };
  } finally {
    connection.closeSync();
  }
}

/** Runs before the service listens: nobody sees the tables between clearing and filling them. */
async function replaceWithDemoData(connection: DuckDBConnection, now: bigint): Promise<void> {
  await clearRecords(connection);
  await generateLogs(connection, { now, ...DEMO_SIZE });
}

export async function rowCounts(connection: DuckDBConnection): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of sourceTables()) {
    const reader = await connection.runAndReadAll(`SELECT count(*) FROM ${quoteIdent(table.name)}`);
    counts[table.name] = Number(reader.getRows()[0]?.[0] ?? 0);
  }
  return counts;
}

export interface LiveOptions {
  /** LOCAL_DATA, watched for new files. */
  localData?: string;
  /** Default 30. */
  localDataPollSeconds?: number;
  /** Default 5. */
  demoIntervalSeconds?: number;
  log: Pick<FastifyBaseLogger, "info" | "warn" | "error">;
}

/** The data kept live; stop it before closing the engine. */
export interface LiveData {
  stop(): Promise<void>;
  /** LOCAL_DATA only: QueryEngine.loadedThrough. */
  loadedThrough?(): bigint | undefined;
}

/**
 * Keeps the data served live: LOCAL_DATA's new files are loaded, or demo rows keep arriving.
 * A database file served as it is stays as it is.
 */
export function keepLive(
  engine: DuckDbEngine,
  data: LoadedData,
  options: LiveOptions,
): LiveData | undefined {
  if (data.source === "local" && options.localData !== undefined && data.listing) {
    const { listedAt, complete } = data.listing;
    const watch = watchExports(engine, {
      source: options.localData,
      pollMs: (options.localDataPollSeconds ?? 30) * 1000,
      log: options.log,
      loadedThrough: complete ? listedAt : 0n,
    });
    // Files that arrived while startup loaded get their first look now, not a poll later.
    watch
      .poll()
      .catch((error) => options.log.error({ err: error }, "LOCAL_DATA: the watch failed"));
    return {
      stop: watch.stop,
      loadedThrough: () => {
        const through = watch.watermark();
        // Before startup's listing: a file it listed is still to load.
        return through >= listedAt ? through : undefined;
      },
    };
  }
  if (data.source === "demo" && data.anchor !== undefined) {
    return feedDemoData(engine, {
      since: data.anchor,
      intervalMs: (options.demoIntervalSeconds ?? 5) * 1000,
      log: options.log,
    });
  }
  return undefined;
}
