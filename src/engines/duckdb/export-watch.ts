// LOCAL_DATA's watch: new export files (an export job writing every few minutes) are loaded
// without a restart, each exactly once. A file is loaded only once it is stable: the same size
// and mtime at two polls in a row; one that still changes while it is read is rolled back and
// tried again at a later poll. A stable file that cannot be read is recorded as bad, logged with
// its name and line, and skipped until it changes; the service keeps serving.
// The watch keeps the data's watermark: the latest instant by which every file that had arrived
// is loaded. A file first listed by a look arrived after the look before it, so the watermark is
// that earlier look's instant while the file waits (to stop changing, or to load), and the latest
// look's once nothing waits. Exports end a lag before it: a late file costs them delay, not records.
import { statSync } from "node:fs";
import type { FastifyBaseLogger } from "fastify";
import { sourceTables } from "../../schema.ts";
import { dateToMicros } from "../../time.ts";
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
  /**
   * Epoch µs by which every file that had arrived was loaded before the watch began (startup's
   * listing, or 0 when a file it listed was still being written); default: none (0).
   */
  loadedThrough?: bigint;
  /** Epoch µs now; default: the system clock. */
  clock?: () => bigint;
}

export interface ExportWatch {
  /** Looks once, now (tests), after the poll under way. */
  poll(): Promise<void>;
  /** No poll starts after this; resolves once the one under way has finished. */
  stop(): Promise<void>;
  /** Epoch µs: every file that had arrived by then is loaded (or recorded as bad). */
  watermark(): bigint;
}

/** A file not loaded yet, as the last look saw it, and the look before it had not listed it. */
interface Waiting extends Pick<FileRecord, "size" | "mtimeMs"> {
  /** Epoch µs: the instant of the last look before the one that first listed it. */
  arrivedAfter: bigint;
}

export function watchExports(engine: DuckDbEngine, options: ExportWatchOptions): ExportWatch {
  const { source, log } = options;
  const clock = options.clock ?? (() => dateToMicros(new Date()));
  const tables = sourceTables();
  // Files not loaded yet, as the last poll saw them.
  const seen = new Map<string, Waiting>();
  // The instant of the last look that went through every file it listed.
  let lookedAt = options.loadedThrough ?? 0n;
  // Loaded files that changed afterwards: warned about once, never loaded twice.
  const warned = new Set<string>();
  let stopped = false;

  async function pollOnce(): Promise<void> {
    // Before listing: a file that arrives during the look is the next look's.
    const listedAt = clock();
    let files: ReturnType<typeof exportFiles>;
    try {
      files = exportFiles(source, tables);
    } catch (error) {
      log.warn({ err: error, source }, "LOCAL_DATA: cannot list the exports; looking again later");
      return;
    }
    const listed = new Set([...files.values()].flat());
    // A file gone before it loaded holds nothing back any more.
    for (const file of seen.keys()) if (!listed.has(file)) seen.delete(file);
    const connection = await engine.connect();
    try {
      const recorded = await recordedFiles(connection);
      for (const [table, paths] of files) {
        for (const file of paths) {
          if (stopped) return;
          const stats = statSync(file, { throwIfNoEntry: false });
          if (!stats) {
            seen.delete(file);
            continue;
          }
          const done = recorded.get(file);
          if (done && (done.error === undefined || unchanged(done, stats))) {
            if (done.error === undefined && !unchanged(done, stats) && !warned.has(file)) {
              warned.add(file);
              log.warn({ file }, "LOCAL_DATA: a loaded export changed; it is not loaded again");
            }
            continue;
          }
          const previous = seen.get(file);
          seen.set(file, {
            size: stats.size,
            mtimeMs: stats.mtimeMs,
            arrivedAfter: previous?.arrivedAfter ?? lookedAt,
          });
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
      lookedAt = listedAt;
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
    watermark() {
      let through = lookedAt;
      for (const { arrivedAfter } of seen.values())
        if (arrivedAfter < through) through = arrivedAfter;
      return through;
    },
  };
}
