// The embedded engine: one DuckDB database per process (a file, or in memory), session time zone
// UTC, endpoint parameters bound by name and rows in the same wire format as BigQuery's.
//
// "now": every query may use `$now`, the query's CURRENT_TIMESTAMP (TIMESTAMPTZ). The engine
// reads its clock once per query and binds it, so tests can pin the clock to the microsecond and
// compare with the reference engine; `now` is therefore not available as an endpoint parameter.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  type DuckDBResult,
  DuckDBTimestampTZValue,
  type DuckDBType,
  DuckDBTypeId,
  StatementType,
  VARCHAR,
} from "@duckdb/node-api";
import { dateToMicros } from "../time.ts";
import { confine } from "./duckdb/sandbox.ts";
import { sqlString } from "./duckdb/tables.ts";
import { resultColumn, rowsAsJson, type WireColumn, wireRows } from "./duckdb/wire.ts";
import {
  EngineError,
  type QueryEngine,
  type QueryRequest,
  type QueryResult,
  ResultGoneError,
  type Row,
  type StatementShape,
  type StreamedRows,
} from "./engine.ts";

export interface DuckDbEngineOptions {
  /** Database file (`DUCKDB_PATH`); in memory when absent. */
  path?: string;
  /** The current time in epoch microseconds, read once per query; default: the system clock. */
  now?: () => bigint;
  /** A query still running after this long is interrupted (`engine_timeout`); default: none. */
  timeoutMs?: number;
  /** DuckDB's memory limit (`DUCKDB_MEMORY_LIMIT`, e.g. `4GB`); beyond it, work spills to disk. */
  memoryLimit?: string;
  /**
   * A streamed result nobody pulls from for this long is closed (its next pull throws
   * ResultGoneError); default STREAM_IDLE_MS.
   */
  streamIdleMs?: number;
  /**
   * The folders its SQL may read (LOCAL_DATA's, a test case's fixtures). Besides them it reaches
   * only its own temp folder: no other file, no extension, no setting (duckdb/sandbox.ts).
   */
  dataFolders?: readonly string[];
  /**
   * Rows one streamed query of a follow stream's catch-up answers at most (default STREAMED_ROWS):
   * what its sort holds while the result is open; the reader reads on from after the last row.
   */
  streamedRows?: number;
}

/**
 * How long a streamed result may wait for its reader. An open one holds a connection, a
 * transaction (CHECKPOINT fails, the WAL grows) and its sort in memory, outside the
 * admission gate's count: a client that keeps its socket open but stops reading must not hold them
 * for longer. The reader that comes back queries again from after its last row.
 */
export const STREAM_IDLE_MS = 5_000;

/**
 * The most rows one streamed query of a follow stream's catch-up answers: a page of its window.
 * DuckDB sorts what a query answers before its first row and holds the sort while the result is
 * open; under a LIMIT of at most 5 000 it keeps only the first rows (top-N), above it sorts the
 * whole window all the same. So a follower that stops reading holds a page (a few MB), not a
 * window of any length (a week of 200 000 records sorted whole held 78 MiB), and the window is
 * read in a query per page, each from after the last row of the one before. A settled run (an
 * export, whose script reads) keeps its one query.
 */
export const STREAMED_ROWS = 5_000;

export interface DuckDbEngine extends QueryEngine {
  readonly dialect: "duckdb";
  /** A new connection to this engine's database (time zone UTC), e.g. to load tables; close it after use. */
  connect(): Promise<DuckDBConnection>;
  /** Streamed results still open, each holding a connection (STREAM_IDLE_MS bounds how long). */
  openStreams(): number;
  inspect(sql: string): Promise<StatementShape>;
}

/** The name `$now` binds to in every query. */
export const NOW_PARAM = "now";

/** Functions the DuckDB twins of the BigQuery SQL call (bigquery_lower), made at every open. */
const MACROS_SQL = readFileSync(
  new URL("../../queries/duckdb/macros.sql", import.meta.url),
  "utf8",
);

export async function createDuckDbEngine(options: DuckDbEngineOptions = {}): Promise<DuckDbEngine> {
  const instance = await DuckDBInstance.create(
    options.path ?? ":memory:",
    options.memoryLimit === undefined ? {} : { memory_limit: options.memoryLimit },
  );
  // Where work beyond the memory limit spills, and the only folder besides the data's its SQL may
  // write: its own, removed at close (DuckDB's default, .tmp, is in the working directory).
  const tempFolder = mkdtempSync(join(tmpdir(), "duckdb-engine-"));
  const removeTemp = () => rmSync(tempFolder, { recursive: true, force: true });
  const setup = await instance.connect();
  try {
    // The session zone decides date_trunc and TIMESTAMP ⇄ TIMESTAMPTZ casts; BigQuery works in UTC.
    await setup.run("SET GLOBAL TimeZone = 'UTC'");
    await setup.run(MACROS_SQL);
    await setup.run(`SET temp_directory = ${sqlString(tempFolder)}`);
    await confine(setup, [...(options.dataFolders ?? []), tempFolder]);
  } catch (error) {
    instance.closeSync();
    removeTemp();
    throw error;
  } finally {
    setup.closeSync();
  }
  const clock = options.now ?? (() => dateToMicros(new Date()));

  const connect = () => instance.connect();
  const streams = { open: 0 };

  async function run(request: QueryRequest): Promise<QueryResult> {
    const connection = await connect();
    let prepared: DuckDBPreparedStatement | undefined;
    const deadline =
      request.deadline ??
      (options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs);
    // Interrupting frees the query's thread: a query nobody waits for must not hold one.
    const interrupt = () => connection.interrupt();
    const timer =
      deadline === undefined
        ? undefined
        : setTimeout(interrupt, Math.max(0, deadline - Date.now()));
    request.signal?.addEventListener("abort", interrupt);
    let streaming = false;
    try {
      request.signal?.throwIfAborted();
      const page =
        request.streamResult && request.trigger === "follow"
          ? (options.streamedRows ?? STREAMED_ROWS)
          : Number.POSITIVE_INFINITY;
      prepared = await connection.prepare(
        // The query's own order kept, its rows cut at a page (a sort that keeps the first rows only).
        Number.isFinite(page) ? `SELECT * FROM (\n${request.sql}\n) LIMIT ${page}` : request.sql,
      );
      // One reading of now for the query: `$now`, and the window it reads (as on BigQuery).
      const now = clock();
      bindParams(prepared, request.window?.(request.params, now) ?? request.params, now);
      const chunks = wireChunks(await prepared.stream());
      if (request.streamResult) {
        // The first chunk waits for the query's heavy part (its filter and sort): within the
        // deadline; the rest is read from its result as pulled, the connection held until then.
        const first = await chunks.next();
        const more = restOf(
          chunks,
          connection,
          prepared,
          options.streamIdleMs ?? STREAM_IDLE_MS,
          streams,
          { read: first.done ? 0 : first.value.length, page },
        );
        prepared = undefined;
        streaming = true;
        return { rows: first.done ? [] : first.value, truncated: false, more };
      }
      const rows: Row[] = [];
      for await (const chunk of chunks) {
        rows.push(...chunk);
        if (rows.length > request.maxRows) break;
      }
      return { rows: rows.slice(0, request.maxRows), truncated: rows.length > request.maxRows };
    } catch (error) {
      if (error instanceof EngineError) throw error;
      const cause = error instanceof Error ? error.message : String(error);
      if (/interrupt/i.test(cause) || request.signal?.aborted) {
        throw new EngineError("engine_timeout", "The query took too long and was stopped.", {
          cause,
        });
      }
      throw new EngineError("engine_error", "The query engine failed to run the query.", { cause });
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", interrupt);
      prepared?.destroySync();
      if (!streaming) connection.closeSync();
    }
  }

  /**
   * DuckDB's parser says whether the SQL is one SELECT (statementKind); only a SELECT is then
   * planned, for its result columns and the planner's objections (an unknown table, a file out of
   * reach).
   */
  async function inspect(sql: string): Promise<StatementShape> {
    const connection = await connect();
    try {
      const kind = await statementKind(connection, sql);
      if (kind !== "SELECT") return { kind };
      const prepared = await connection.prepare(sql);
      try {
        const columns = await resultColumns(connection, prepared, sql, clock());
        return {
          kind: StatementType[prepared.statementType] ?? "OTHER",
          // Rows written whole as JSON have the columns of their keys, known only once written.
          ...(columns &&
            !rowsAsJson(columns) && {
              columns: columns.map(({ name, type }) => resultColumn(name, type)),
            }),
        };
      } finally {
        prepared.destroySync();
      }
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      throw new EngineError("engine_error", "DuckDB cannot plan the SQL.", { cause });
    } finally {
      connection.closeSync();
    }
  }

  return {
    dialect: "duckdb",
    run,
    inspect,
    connect,
    openStreams: () => streams.open,
    async ping() {
      const connection = await connect();
      try {
        await connection.run("SELECT 1");
      } finally {
        connection.closeSync();
      }
    },
    async close() {
      instance.closeSync();
      removeTemp();
    },
  };
}

/**
 * SELECT when DuckDB's parser finds `sql` one SELECT, SCRIPT when it finds several statements,
 * OTHER for any other statement. json_serialize_sql parses without binding, reading or running
 * anything, and serialises SELECTs only. Neither extractStatements nor prepare would do: the parser
 * behind them expands IMPORT DATABASE into the statements of its folder's schema.sql (whatever that
 * file holds when it is read), and preparing EXPORT DATABASE creates its folder.
 */
async function statementKind(connection: DuckDBConnection, sql: string): Promise<string> {
  const parse = await connection.prepare("SELECT json_serialize_sql($sql::VARCHAR)");
  let parsed: {
    error: boolean;
    error_type?: string;
    error_message?: string;
    statements?: unknown[];
  };
  try {
    parse.bindVarchar(1, sql);
    parsed = JSON.parse(String((await parse.runAndReadAll()).getRows()[0]?.[0]));
  } finally {
    parse.destroySync();
  }
  if (parsed.error) {
    // "Only SELECT statements can be serialized to json!"
    if (parsed.error_type === "not implemented") return "OTHER";
    throw new Error(parsed.error_message ?? "DuckDB's parser refused the SQL");
  }
  const count = parsed.statements?.length ?? 0;
  if (count === 0) throw new Error("the SQL holds no statement");
  return count === 1 ? "SELECT" : "SCRIPT";
}

/**
 * The result columns of `prepared`, one SELECT (the text `sql`). Until its parameters' types are
 * known, DuckDB names one column "unknown": they are then those of the SELECT DuckDB's parser
 * serialised (its own text, without comments or a semicolon) under LIMIT 0, which DuckDB plans as
 * an empty result, nothing read, its parameters bound as a run binds them (`$now` a TIMESTAMPTZ,
 * the rest VARCHAR, here NULL). Undefined when that needs a parameter's value (`read_text($file)`).
 */
async function resultColumns(
  connection: DuckDBConnection,
  prepared: DuckDBPreparedStatement,
  sql: string,
  now: bigint,
): Promise<WireColumn[] | undefined> {
  if (prepared.columnCount !== 1 || prepared.columnTypeId(0) !== DuckDBTypeId.INVALID) {
    return Array.from({ length: prepared.columnCount }, (_, index) => ({
      name: prepared.columnName(index),
      type: prepared.columnType(index),
    }));
  }
  const parse = await connection.prepare(
    "SELECT json_deserialize_sql(json_serialize_sql($sql::VARCHAR))",
  );
  let select: string;
  try {
    parse.bindVarchar(1, sql);
    select = String((await parse.runAndReadAll()).getRows()[0]?.[0]);
  } finally {
    parse.destroySync();
  }
  const empty = await connection.prepare(`SELECT * FROM (${select}) LIMIT 0`);
  try {
    for (let index = 1; index <= empty.parameterCount; index++) {
      if (empty.parameterName(index) === NOW_PARAM) {
        empty.bindTimestampTZ(index, new DuckDBTimestampTZValue(now));
      } else empty.bindValue(index, null, VARCHAR);
    }
    const result = await empty.run();
    const types = result.columnTypes();
    return result.columnNames().map((name, index) => ({ name, type: types[index] as DuckDBType }));
  } catch {
    return undefined;
  } finally {
    empty.destroySync();
  }
}

/** A result's rows in the wire format, a chunk at a time as DuckDB makes them. */
async function* wireChunks(result: DuckDBResult): AsyncGenerator<Row[], void, undefined> {
  const types = result.columnTypes();
  const columns: WireColumn[] = result
    .columnNames()
    .map((name, index) => ({ name, type: types[index] as DuckDBType }));
  for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; ) {
    yield wireRows(chunk, columns);
    chunk = await result.fetchChunk();
  }
}

/**
 * A streamed result's chunks after the first. Its connection closes when they end, fail or are
 * returned, even unread (a generator's own cleanup would not run then), or when nobody pulls the
 * next chunk within `idleMs`: that pull then throws ResultGoneError. Drained, it says whether it
 * ended at its page's last row (`rows.read` of `rows.page`), so that more may follow.
 */
function restOf(
  chunks: AsyncIterator<Row[], void, undefined>,
  connection: DuckDBConnection,
  prepared: DuckDBPreparedStatement,
  idleMs: number,
  streams: { open: number },
  rows: { read: number; page: number },
): StreamedRows {
  let open = true;
  streams.open++;
  let idle: NodeJS.Timeout | undefined;
  const finished = { done: true, value: undefined } as const;
  const close = () => {
    clearTimeout(idle);
    if (!open) return finished;
    open = false;
    streams.open--;
    prepared.destroySync();
    connection.closeSync();
    return finished;
  };
  let closedIdle = false;
  const awaitPull = () => {
    idle = setTimeout(() => {
      closedIdle = true;
      close();
    }, idleMs);
    idle.unref();
  };
  awaitPull();
  const rest = {
    truncated: false,
    async next(): Promise<IteratorResult<Row[], undefined>> {
      clearTimeout(idle);
      if (closedIdle) {
        throw new ResultGoneError(`The streamed result waited ${idleMs} ms unread and was closed.`);
      }
      try {
        for (let chunk = await chunks.next(); open; chunk = await chunks.next()) {
          if (chunk.done) {
            rest.truncated = rows.read >= rows.page;
            return close();
          }
          if (chunk.value.length > 0) {
            rows.read += chunk.value.length;
            awaitPull();
            return chunk;
          }
        }
        return finished;
      } catch (error) {
        close();
        throw error;
      }
    },
    return: async () => close(),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return rest;
}

/** Binds each `$name` the SQL uses: `$now` from the clock, the rest as VARCHAR (NULL when absent). */
function bindParams(
  prepared: DuckDBPreparedStatement,
  params: QueryRequest["params"],
  now: bigint,
): void {
  for (let index = 1; index <= prepared.parameterCount; index++) {
    const name = prepared.parameterName(index);
    if (name === NOW_PARAM) {
      prepared.bindTimestampTZ(index, new DuckDBTimestampTZValue(now));
      continue;
    }
    if (!(name in params)) {
      throw new EngineError(
        "engine_error",
        "The query uses a parameter the endpoint does not declare.",
        {
          cause: `unknown parameter $${name}`,
        },
      );
    }
    const value = params[name];
    if (value === null || value === undefined) prepared.bindNull(index);
    else prepared.bindVarchar(index, value);
  }
}
