// LOCAL_DATA's watch: new export files (an export job writing every few minutes) are loaded
// without a restart, each exactly once. A file is loaded only once it is stable: the same size
// and mtime at two polls in a row; one that still changes while it is read is rolled back and
// tried again at a later poll. A stable file that cannot be read is recorded as bad, logged with
// its name and line, and skipped until it changes; the service keeps serving.
import { statSync } from "node:fs";
import type { FastifyBaseLogger } from "fastify";
import { sourceTables } from "../../schema.ts";
import type { DuckDbEngine } from "../duckdb.ts";
import {
  DataFileError,
  exportFiles,
  FileChangedError,
  type FileRecord,
  loadExport,
  record,
  recordedFiles,
  unchanged,
} from "./local-data.ts";
import { repeat } from "./repeat.ts";

export interface ExportWatchOptions {
  /** LOCAL_DATA: a folder or a glob. */
  source: string;
  pollMs: number;
  log: Pick<FastifyBaseLogger, "info" | "warn" | "error">;
  /** Runs after a file is read, before its size and mtime are checked again (tests grow it here). */
  afterRead?: (file: string) => Promise<void>;
}

export interface ExportWatch {
  /** Looks once, now (tests), after the poll under way. */
  poll(): Promise<void>;
  /** No poll starts after this; resolves once the one under way has finished. */
  stop(): Promise<void>;
}

export function watchExports(engine: DuckDbEngine, options: ExportWatchOptions): ExportWatch {
  const { source, log } = options;
  const tables = sourceTables();
  // Files not loaded yet, as the last poll saw them.
  const seen = new Map<string, Pick<FileRecord, "size" | "mtimeMs">>();
  // Loaded files that changed afterwards: warned about once, never loaded twice.
  const warned = new Set<string>();
  let stopped = false;

  async function pollOnce(): Promise<void> {
    let files: ReturnType<typeof exportFiles>;
    try {
      files = exportFiles(source, tables);
    } catch (error) {
      log.warn({ err: error, source }, "LOCAL_DATA: cannot list the exports; looking again later");
      return;
    }
    const connection = await engine.connect();
    try {
      const recorded = await recordedFiles(connection);
      for (const [table, paths] of files) {
        for (const file of paths) {
          if (stopped) return;
          const stats = statSync(file, { throwIfNoEntry: false });
          if (!stats) continue;
          const done = recorded.get(file);
          if (done && (done.error === undefined || unchanged(done, stats))) {
            if (done.error === undefined && !unchanged(done, stats) && !warned.has(file)) {
              warned.add(file);
              log.warn({ file }, "LOCAL_DATA: a loaded export changed; it is not loaded again");
            }
            continue;
          }
          const previous = seen.get(file);
          seen.set(file, { size: stats.size, mtimeMs: stats.mtimeMs });
          if (!previous || !unchanged(previous, stats)) continue;
          try {
            const loaded = await loadExport(
              connection,
              table,
              file,
              stats,
              options.afterRead && (() => options.afterRead?.(file) ?? Promise.resolve()),
            );
            seen.delete(file);
            log.info(loaded, "LOCAL_DATA: loaded a new export");
          } catch (error) {
            if (error instanceof FileChangedError) {
              log.info(
                { file },
                "LOCAL_DATA: an export is still being written; trying again later",
              );
            } else if (error instanceof DataFileError) {
              seen.delete(file);
              await record(connection, file, stats, { error: error.message });
              log.error(
                { file: error.file, line: error.line },
                `LOCAL_DATA: skipped a bad export: ${error.message}`,
              );
            } else {
              log.error(
                { err: error, file },
                "LOCAL_DATA: could not load an export; trying again later",
              );
            }
          }
        }
      }
    } finally {
      connection.closeSync();
    }
  }

  const repeated = repeat(options.pollMs, pollOnce, (error) =>
    log.error({ err: error }, "LOCAL_DATA: the watch failed"),
  );
  return {
    poll: repeated.run,
    async stop() {
      stopped = true;
      await repeated.stop();
    },
  };
}
