// LOCAL_DATA: a folder of BigQuery exports as `bq extract` writes them (`edge_logs*` and
// `function_edge_logs*` files: newline-delimited JSON `.json|.jsonl|.ndjson`, each optionally
// gzipped `.gz`, or `.parquet`) read with the types of queries/schema, never guessed.
// JSON timestamps may be ISO 8601 or BigQuery's `YYYY-MM-DD HH:MM:SS[.ffffff] UTC`, and integers
// may be JSON strings (as BigQuery exports INT64). A bad file stops loading with its name and, for
// JSON, its line; a Parquet file with the columns it lacks.
import { createReadStream, readdirSync, statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pipeline, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import type { DuckDBConnection } from "@duckdb/node-api";
import { type SourceTable, sourceTables } from "../../schema.ts";
import { bigQueryShapedColumns, createTableSql, duckDbType, quoteIdent } from "./tables.ts";

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

/** The export files of `folder`, by table; other files are ignored. */
export function exportFiles(folder: string, tables: SourceTable[]): Map<SourceTable, string[]> {
  const files = new Map<SourceTable, string[]>();
  for (const name of readdirSync(folder).sort()) {
    const table = tables.find((t) => name.startsWith(t.name));
    if (!table || !(isJson(name) || name.endsWith(".parquet"))) continue;
    files.set(table, [...(files.get(table) ?? []), join(folder, name)]);
  }
  return files;
}

/**
 * Replaces the contents of the source tables with the exports in `folder`, in one transaction:
 * on a bad file nothing changes. Tables without files are left empty.
 */
export async function loadLocalData(
  connection: DuckDBConnection,
  folder: string,
): Promise<LoadedFile[]> {
  const stats = statSync(folder, { throwIfNoEntry: false });
  if (!stats?.isDirectory()) {
    throw new Error(
      `LOCAL_DATA: ${stats ? `${folder} is not a folder` : `folder ${folder} does not exist`}`,
    );
  }
  const tables = sourceTables();
  const files = exportFiles(folder, tables);
  if (files.size === 0) {
    throw new Error(
      `LOCAL_DATA: folder ${folder} holds no ${tables.map((t) => `${t.name}*`).join(" or ")} files ending in .json, .jsonl, .ndjson (each optionally .gz) or .parquet`,
    );
  }
  const loaded: LoadedFile[] = [];
  await connection.run("BEGIN TRANSACTION");
  try {
    for (const table of tables) {
      await connection.run(createTableSql(table));
      await connection.run(`DELETE FROM ${quoteIdent(table.name)}`);
      for (const file of files.get(table) ?? []) {
        loaded.push({ table: table.name, file, rows: await loadFile(connection, table, file) });
      }
    }
    await connection.run("COMMIT");
  } catch (error) {
    await connection.run("ROLLBACK");
    throw error instanceof DataFileError ? await explained(connection, error) : error;
  }
  return loaded;
}

async function loadFile(connection: DuckDBConnection, table: SourceTable, file: string) {
  try {
    const result = await connection.run(
      `INSERT INTO ${quoteIdent(table.name)} SELECT ${bigQueryShapedColumns(table)} FROM ${readFile(table, file)}`,
    );
    return result.rowsChanged;
  } catch (error) {
    throw new DataFileError(file, undefined, duckDbReason(error), table);
  }
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
  const folder = await mkdtemp(join(tmpdir(), "local-data-"));
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

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
