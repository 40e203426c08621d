// LOCAL_DATA: BigQuery exports as `bq extract` writes them (`edge_logs*` and `function_edge_logs*`
// files: newline-delimited JSON `.json|.jsonl|.ndjson`, each optionally gzipped `.gz`, or
// `.parquet`), in a folder or matched by a glob, read with the types of queries/schema, never
// guessed. JSON timestamps may be ISO 8601 or BigQuery's `YYYY-MM-DD HH:MM:SS[.ffffff] UTC`, and
// integers may be JSON strings (as BigQuery exports INT64).
// Each file is loaded once, in its own transaction, and recorded in the database (loaded_files:
// name, size, mtime, rows or error): a file already recorded is not loaded again, after a restart
// either. A bad file is named with its line for JSON, or the columns a Parquet file lacks.
import { createReadStream, globSync, readdirSync, type Stats, statSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { pipeline, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { type DuckDBConnection, DuckDBTimestampTZValue } from "@duckdb/node-api";
import { type SourceTable, sourceTables } from "../../schema.ts";
import { dateToMicros } from "../../time.ts";
import { appendRecords, BATCH_ROWS, clearRecords, HOUR } from "./derived.ts";
import { scratchFolder } from "./sandbox.ts";
import { bigQueryShapedColumns, duckDbType, quoteIdent, sqlString } from "./tables.ts";
import { inTransaction } from "./transaction.ts";

export interface LoadedFile {
  table: string;
  file: string;
  rows: number;
}

/** A file that cannot be loaded; `line` (1-based) when the file is JSON and DuckDB could place it. */
export class DataFileError extends Error {
  readonly file: string;
  readonly line: number | undefined;
  /** The table the file was loaded into, to explain the error later. */
  readonly table: SourceTable | undefined;

  constructor(file: string, line: number | undefined, reason: string, table?: SourceTable) {
    super(`${file}${line === undefined ? "" : `, line ${line}`}: ${reason}`);
    this.name = "DataFileError";
    this.file = file;
    this.line = line;
    this.table = table;
  }
}

/** The file changed while it was read: it is still being written, and is tried again later. */
export class FileChangedError extends Error {
  override name = "FileChangedError";
}

const LOADED_FILES_SQL = `CREATE TABLE IF NOT EXISTS loaded_files (
  file VARCHAR PRIMARY KEY,
  size BIGINT,
  mtime_ms DOUBLE,
  rows BIGINT,
  error VARCHAR,
  recorded_at TIMESTAMPTZ DEFAULT current_timestamp
)`;

/** What loaded_files says of one file. */
export interface FileRecord {
  size: number;
  mtimeMs: number;
  /** Why the file could not be loaded; absent when it was. */
  error?: string;
}

/** Whether LOCAL_DATA is a glob rather than a folder. */
function isGlob(source: string): boolean {
  return /[*?[{]/.test(source);
}

/**
 * The folder every export of `source` (a folder or a glob) is in: the folder itself, or the glob's
 * folders before its first pattern. The engine's SQL may read there and nowhere else (sandbox.ts).
 */
export function localDataFolder(source: string): string {
  if (!isGlob(source)) return source;
  let folder = source;
  while (isGlob(folder)) folder = dirname(folder);
  return folder;
}

/** The export files of `source` (a folder or a glob), by table in table order, each sorted by name. */
export function exportFiles(source: string, tables: SourceTable[]): Map<SourceTable, string[]> {
  const paths = isGlob(source)
    ? globSync(source)
    : readdirSync(source).map((name) => join(source, name));
  const files = new Map<SourceTable, string[]>();
  for (const table of tables) {
    const own = paths
      .filter((path) => {
        const name = basename(path);
        // The longest matching table name wins: function_edge_logs* is not an edge_logs* file.
        const owner = tables
          .filter((t) => name.startsWith(t.name))
          .sort((a, b) => b.name.length - a.name.length)[0];
        return owner === table && (isJson(name) || name.endsWith(".parquet"));
      })
      .sort();
    if (own.length > 0) files.set(table, own);
  }
  return files;
}

/** The files loaded_files records, by name. */
export async function recordedFiles(
  connection: DuckDBConnection,
): Promise<Map<string, FileRecord>> {
  await connection.run(LOADED_FILES_SQL);
  const reader = await connection.runAndReadAll(
    "SELECT file, size, mtime_ms, error FROM loaded_files",
  );
  return new Map(
    reader.getRows().map(([file, size, mtimeMs, error]) => [
      String(file),
      {
        size: Number(size),
        mtimeMs: Number(mtimeMs),
        ...(typeof error === "string" && { error }),
      },
    ]),
  );
}

/** Whether a record (or an earlier look) still describes the file. */
export function unchanged(
  seen: Pick<FileRecord, "size" | "mtimeMs">,
  stats: Pick<Stats, "size" | "mtimeMs">,
): boolean {
  return seen.size === stats.size && seen.mtimeMs === stats.mtimeMs;
}

/** What startup loaded of LOCAL_DATA. */
export interface LocalDataLoad {
  files: LoadedFile[];
  /** Epoch µs: when the exports were listed. */
  listedAt: bigint;
  /** Whether every file listed is loaded (or recorded as bad); not when one was still being written. */
  complete: boolean;
}

/**
 * Loads the exports of `source` not loaded before, at startup: each file once, in its own
 * transaction. A database holding rows from elsewhere (demo data) is emptied first. A bad file
 * stops loading (the files before it stay loaded), naming the file and its line; a file recorded
 * as bad and unchanged since is skipped, and one changing while it is read is left to the watch.
 */
export async function loadLocalData(
  connection: DuckDBConnection,
  source: string,
  // Before listing: a file that arrives meanwhile is the watch's.
  listedAt: bigint = dateToMicros(new Date()),
): Promise<LocalDataLoad> {
  if (!isGlob(source)) {
    const stats = statSync(source, { throwIfNoEntry: false });
    if (!stats?.isDirectory()) {
      throw new Error(
        `LOCAL_DATA: ${stats ? `${source} is not a folder` : `folder ${source} does not exist`}`,
      );
    }
  }
  const tables = sourceTables();
  const files = exportFiles(source, tables);
  if (files.size === 0) {
    throw new Error(
      `LOCAL_DATA: ${isGlob(source) ? `glob ${source} matches` : `folder ${source} holds`} no ${tables.map((t) => `${t.name}*`).join(" or ")} files ending in .json, .jsonl, .ndjson (each optionally .gz) or .parquet`,
    );
  }
  const recorded = await recordedFiles(connection);
  if (recorded.size === 0) await clearRecords(connection);
  const loaded: LoadedFile[] = [];
  let complete = true;
  for (const [table, paths] of files) {
    for (const file of paths) {
      const record = recorded.get(file);
      const stats = statSync(file);
      if (record && (record.error === undefined || unchanged(record, stats))) continue;
      try {
        loaded.push(await loadExport(connection, table, file, stats));
      } catch (error) {
        // Still being written: LOCAL_DATA's watch loads it once it stops changing.
        if (!(error instanceof FileChangedError)) throw error;
        complete = false;
      }
    }
  }
  return { files: loaded, listedAt, complete };
}

/**
 * Loads one export file in a transaction and records it with the size and mtime it had before
 * reading: on a bad file nothing is loaded (DataFileError, explained); when the file changed
 * while it was read, nothing is loaded or recorded (FileChangedError). `afterRead` runs between
 * reading and the check (tests use it to grow the file).
 */
export async function loadExport(
  connection: DuckDBConnection,
  table: SourceTable,
  file: string,
  before: Stats,
  afterRead?: () => Promise<void>,
): Promise<LoadedFile> {
  const changed = () => !unchanged(before, statSync(file, { throwIfNoEntry: false }) ?? NO_FILE);
  let rows: number;
  try {
    rows = await inTransaction(connection, async () => {
      const loaded = await loadFile(connection, table, file);
      await afterRead?.();
      if (changed()) throw new FileChangedError(`${file} changed while it was read`);
      await record(connection, file, before, { rows: loaded });
      return loaded;
    });
  } catch (error) {
    if (!(error instanceof DataFileError)) throw error;
    if (changed()) throw new FileChangedError(`${file} changed while it was read`);
    throw await explained(connection, error);
  }
  // The loaded rows go into the database file now, not left in the write-ahead log for the
  // queries that follow and for the next start to replay. A streamed result being read (an export,
  // a catch-up) holds a transaction that refuses it: DuckDB's own automatic checkpoint does it later.
  await connection.run("CHECKPOINT").catch((error: unknown) => {
    if (!/Cannot CHECKPOINT: there are other .*transactions active/.test(String(error)))
      throw error;
  });
  return { table: table.name, file, rows };
}

/** How a file that is gone compares: changed, whatever was recorded. */
const NO_FILE = { size: -1, mtimeMs: -1 };

/** Records a file as loaded, or as bad with its error. */
export async function record(
  connection: DuckDBConnection,
  file: string,
  stats: Stats,
  outcome: { rows: number } | { error: string },
): Promise<void> {
  await connection.run(
    "INSERT OR REPLACE INTO loaded_files (file, size, mtime_ms, rows, error) VALUES ($file, $size, $mtime, $rows, $error)",
    {
      file,
      size: stats.size,
      mtime: stats.mtimeMs,
      rows: "rows" in outcome ? outcome.rows : 0,
      error: "error" in outcome ? outcome.error : null,
    },
  );
}

const STAGED = "staged_records";
const SLICE = "staged_slice";

/**
 * Reads the file into a staged table (DuckDB's own memory, spilled to disk beyond its limit), then
 * appends it a time slice of about BATCH_ROWS records at a time, each sorted by time: sorting and
 * deriving a whole large file at once would take memory beyond DuckDB's limit. The slices are
 * consecutive hours, so the rows stay in timestamp order across them, whatever order the file
 * holds them in.
 */
async function loadFile(connection: DuckDBConnection, table: SourceTable, file: string) {
  // With DuckDB's threads: its settings are locked before any endpoint SQL runs (sandbox.ts), so
  // the load cannot take one thread for itself (with two, one 10 M-record Parquet file's load
  // reached 4.2-5.5 GiB of RSS under a 4GB limit on an idle machine, 4.3 with one).
  try {
    await connection.run(
      `CREATE OR REPLACE TEMP TABLE ${STAGED} AS SELECT ${bigQueryShapedColumns(table)} FROM ${readFile(table, file)}`,
    );
  } catch (error) {
    throw new DataFileError(file, undefined, duckDbReason(error), table);
  }
  let rows = 0;
  for (const slice of await timeSlices(connection)) {
    await connection.run(
      `CREATE OR REPLACE TEMP TABLE ${SLICE} AS FROM ${STAGED} WHERE ${
        slice ? "timestamp >= $from AND timestamp < $to" : "timestamp IS NULL"
      } ORDER BY timestamp`,
      slice
        ? { from: new DuckDBTimestampTZValue(slice.from), to: new DuckDBTimestampTZValue(slice.to) }
        : {},
    );
    rows += await appendRecords(connection, table.name, SLICE);
  }
  await connection.run(`DROP TABLE IF EXISTS ${SLICE}`);
  await connection.run(`DROP TABLE ${STAGED}`);
  return rows;
}

interface Slice {
  /** Epoch µs, a whole hour. */
  from: bigint;
  /** Epoch µs, a whole hour after `from`. */
  to: bigint;
  rows: number;
}

/**
 * The staged records cut into runs of whole hours of at most BATCH_ROWS records (an hour holding
 * more is a run of its own), oldest first; `null` stands for the records without a timestamp.
 */
async function timeSlices(connection: DuckDBConnection): Promise<(Slice | null)[]> {
  const reader = await connection.runAndReadAll(
    `SELECT epoch_us(date_trunc('hour', timestamp)), count(*) FROM ${STAGED} GROUP BY 1 ORDER BY 1 NULLS FIRST`,
  );
  const slices: (Slice | null)[] = [];
  for (const [hour, count] of reader.getRows()) {
    const rows = Number(count);
    const last = slices.at(-1);
    if (typeof hour !== "bigint") slices.push(null);
    else if (last && last.rows + rows <= BATCH_ROWS) {
      last.to = hour + HOUR;
      last.rows += rows;
    } else slices.push({ from: hour, to: hour + HOUR, rows });
  }
  return slices;
}

/** Newline-delimited JSON, optionally gzipped (DuckDB decompresses by the `.gz` ending). */
function isJson(file: string): boolean {
  return /\.(?:json|jsonl|ndjson)(?:\.gz)?$/.test(file);
}

/** A relation over one export file with exactly the table's columns and types. */
function readFile(table: SourceTable, file: string): string {
  return isJson(file)
    ? `read_json(${sqlString(file)}, format = 'newline_delimited', columns = {${table.fields
        .map((f) => `${sqlString(f.name)}: ${sqlString(duckDbType(f))}`)
        .join(", ")}})`
    : `(SELECT ${table.fields
        .map((f) => `CAST(${quoteIdent(f.name)} AS ${duckDbType(f)}) AS ${quoteIdent(f.name)}`)
        .join(", ")} FROM read_parquet(${sqlString(file)}))`;
}

/**
 * The error made precise (outside the failed transaction): the columns a Parquet file lacks, or
 * why a JSON file is not newline-delimited, or its first bad line.
 */
async function explained(
  connection: DuckDBConnection,
  error: DataFileError,
): Promise<DataFileError> {
  const { file, table } = error;
  if (!table) return error;
  try {
    if (!isJson(file)) {
      const missing = await missingColumns(connection, table, file);
      if (missing.length === 0) return error;
      return new DataFileError(
        file,
        undefined,
        `missing column${missing.length === 1 ? "" : "s"} ${missing.map((name) => `"${name}"`).join(", ")} (the table's columns are ${table.fields.map((f) => f.name).join(", ")})`,
      );
    }
    if (await holdsJsonArray(file)) {
      return new DataFileError(
        file,
        undefined,
        "is a JSON array, but the file must hold one JSON object per line (newline-delimited JSON, as bq extract writes)",
      );
    }
    const bad = await firstBadLine(connection, table, file);
    return bad ? new DataFileError(file, bad.line, bad.reason) : error;
  } catch {
    // The file cannot be read again either (a corrupt Parquet or gzip file): DuckDB's message stands.
    return error;
  }
}

/** The table's columns a Parquet file lacks; DuckDB matches column names ignoring case. */
async function missingColumns(
  connection: DuckDBConnection,
  table: SourceTable,
  file: string,
): Promise<string[]> {
  const reader = await connection.runAndReadAll(
    `SELECT lower(column_name) FROM (DESCRIBE SELECT * FROM read_parquet(${sqlString(file)}))`,
  );
  const present = new Set(reader.getRows().map(([name]) => name));
  return table.fields.map((f) => f.name).filter((name) => !present.has(name.toLowerCase()));
}

/** Whether the file's first non-blank character opens a JSON array, which DuckDB reports only as a type error. */
async function holdsJsonArray(file: string): Promise<boolean> {
  // By chunks, not lines: such a file may be a single line of any size.
  for await (const chunk of contents(file)) {
    const start = String(chunk).trimStart();
    if (start !== "") return start.startsWith("[");
  }
  return false;
}

/** The lines of a JSON export. */
async function* lines(file: string): AsyncGenerator<string> {
  const input = contents(file);
  try {
    yield* createInterface({ input, crlfDelay: Infinity });
  } finally {
    input.destroy();
  }
}

/** The decompressed bytes of a JSON export. */
function contents(file: string): Readable {
  // An error of either stream reaches the reader through the gunzip stream.
  return file.endsWith(".gz")
    ? pipeline(createReadStream(file), createGunzip(), () => {})
    : createReadStream(file);
}

const BATCH_LINES = 10_000;

/**
 * DuckDB's read_json only approximates the line of an error, so the file's lines are read again
 * by DuckDB in batches, bisecting a failing batch down to the first line it rejects.
 */
async function firstBadLine(
  connection: DuckDBConnection,
  table: SourceTable,
  file: string,
): Promise<{ line: number; reason: string } | undefined> {
  const folder = await scratchFolder(connection, "local-data-");
  const probe = join(folder, "lines.ndjson");
  const rejection = async (texts: string[]) => {
    await writeFile(probe, `${texts.join("\n")}\n`);
    try {
      await connection.run(
        `CREATE OR REPLACE TEMP TABLE line_probe AS FROM ${readFile(table, probe)}`,
      );
      return undefined;
    } catch (error) {
      // The position DuckDB gives is within the probe file, not the user's.
      return duckDbReason(error).replace(/ in file "[^"]*",(?: at byte \d+)? in line \d+/, "");
    }
  };
  const search = async (batch: Line[]): Promise<{ line: number; reason: string } | undefined> => {
    const reason = await rejection(batch.map((l) => l.text));
    if (reason === undefined) return undefined;
    const [only] = batch;
    if (batch.length === 1 && only) return { line: only.line, reason };
    const half = Math.ceil(batch.length / 2);
    return (await search(batch.slice(0, half))) ?? (await search(batch.slice(half)));
  };
  try {
    let batch: Line[] = [];
    let line = 0;
    for await (const text of lines(file)) {
      line += 1;
      if (text.trim() !== "") batch.push({ line, text });
      if (batch.length === BATCH_LINES) {
        const bad = await search(batch);
        if (bad) return bad;
        batch = [];
      }
    }
    return batch.length > 0 ? await search(batch) : undefined;
  } finally {
    await connection.run("DROP TABLE IF EXISTS line_probe");
    await rm(folder, { recursive: true, force: true });
  }
}

interface Line {
  line: number;
  text: string;
}

/** DuckDB's message without its advice on read_json options, which a user of this service cannot set. */
function duckDbReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).trim();
}
