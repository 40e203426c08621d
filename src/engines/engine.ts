// What every query engine offers the service: run one endpoint query with bound STRING params.
import type { WindowBinding } from "./sql-params.ts";

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** A result row in the wire format of docs/api.md (TIMESTAMP as RFC 3339 µs string, INT64 as number). */
export type Row = Record<string, JsonValue>;

/**
 * A row's JSON text as JSON.stringify writes it, when its engine already holds it (DuckDB wrote it):
 * kept on the row, out of sight of JSON.stringify, Object.keys and spreads.
 */
const WIRE_JSON = Symbol("the row's JSON");

/** Keeps `json`, which must be JSON.stringify's text of `row`, as the row's JSON. */
export function withJson(row: Row, json: string): Row {
  Object.defineProperty(row, WIRE_JSON, { value: json });
  return row;
}

/** The row's JSON text, as JSON.stringify writes it. */
export function rowJson(row: Row): string {
  return (row as { [WIRE_JSON]?: string })[WIRE_JSON] ?? JSON.stringify(row);
}

export interface QueryRequest {
  /** Endpoint name: job label and log field. */
  endpoint: string;
  /** SQL in the engine's own dialect, with named parameters. */
  sql: string;
  /** The time window the engine binds beside `params` from its reading of now; absent: none. */
  window?: WindowBinding;
  /** Every parameter the endpoint declares; null when absent. Always bound, never spliced. */
  params: Record<string, string | null>;
  /** Rows beyond this are not fetched; `truncated` says so. */
  maxRows: number;
  /**
   * What caused the query: a caller's request, the cache's background refresh (warming), a follow
   * stream's poll or catch-up, a settled run (export).
   */
  trigger?: "request" | "warming" | "follow" | "export";
  /** Who caused it (a credential's name), when a caller did: the gate's fair share, the job's label. */
  credential?: string;
  /**
   * Work that keeps a live view current rather than answering a caller who waits (a feed's poll, an
   * alert rule's read): the gate keeps capacity for it that callers' queries cannot take. Work no
   * credential caused (warming) is such work too.
   */
  background?: boolean;
  /** Epoch ms by which the answer is due; the engine stops the query then. Default: its own timeout. */
  deadline?: number;
  /** Aborted when nobody waits for the answer any more (deadline, shutdown): stop the work. */
  signal?: AbortSignal;
  /** The SQL has no LIMIT: answer the first `maxRows` rows and keep the rest where `rest` says (BigQuery). */
  keepResult?: boolean;
  /**
   * The SQL has no LIMIT: answer its first rows and stream the rest through `more`, computed as it
   * is pulled (DuckDB), up to the engine's page (`more.truncated` then says so). The caller drains
   * `more` or returns it: it holds the query's connection.
   */
  streamResult?: boolean;
}

/**
 * Where the rest of a query's result waits, when the engine keeps it: BigQuery's job and the page
 * token of its next result page. Reading it runs no query and bills no bytes (for about a day, then
 * the job's result is gone).
 */
export interface ResultPlace {
  jobId: string;
  location?: string;
  pageToken: string;
}

export interface QueryResult {
  rows: Row[];
  truncated: boolean;
  /** BigQuery's job id when it created a job, else its query id; and bytes processed: for the log. */
  jobId?: string;
  queryId?: string;
  bytesProcessed?: number;
  /** With keepResult, where the rows after these wait; absent when there are none. */
  rest?: ResultPlace;
  /** With streamResult, the rows after these, a chunk at a time as they are pulled. */
  more?: StreamedRows;
}

/** A streamed result's rows, a chunk at a time; `return()` ends it early and frees its connection. */
export interface StreamedRows extends AsyncIterableIterator<Row[]> {
  return(): Promise<IteratorReturnResult<undefined>>;
  /**
   * Once drained: the engine stopped at the most rows one query answers, and the rows after the
   * last one are read by another query.
   */
  readonly truncated?: boolean;
}

/** What a page read shares with the query it continues: its label, size, cause and deadline. */
export type PageRequest = Pick<
  QueryRequest,
  "endpoint" | "window" | "maxRows" | "trigger" | "credential" | "deadline" | "signal"
> & {
  /**
   * A page walk's parameters (its rows newest first). The window they name starts later as time
   * passes (the retention edge) while the result is kept, about a day: a page read drops the
   * rows its window no longer holds at the read's "now", and the walk ends there (no `rest`).
   */
  walk?: QueryRequest["params"];
};

export type Dialect = "bigquery" | "duckdb";

/** What an engine's own parser makes of one SQL text, without running it. */
export interface StatementShape {
  /**
   * The statement's kind in BigQuery's dry-run names (JobStatistics2.statementType): SELECT for a
   * read-only query, SCRIPT for more than one statement, INSERT, DELETE, DROP_TABLE... otherwise.
   */
  kind: string;
  /** A SELECT's result columns, in order, when the engine can tell them without running it. */
  columns?: ResultColumn[];
}

/**
 * A column of a query's result in BigQuery's table-schema form, the form an endpoint declares its
 * columns in: `type` names what the wire format makes of the engine's type (INT64, FLOAT64, BOOL,
 * STRING, TIMESTAMP, DATETIME, RECORD with `fields`; JSON where a value of any type may come, else
 * the engine's own name when the wire format has no value for it), REPEATED for a list of them.
 * `spelled` is the type as the engine names it, for a message.
 */
export interface ResultColumn {
  name: string;
  type: string;
  mode?: "REPEATED";
  fields?: ResultColumn[];
  spelled: string;
}

export interface QueryEngine {
  readonly dialect: Dialect;
  run(request: QueryRequest): Promise<QueryResult>;
  /**
   * The next `maxRows` rows at `place` (BigQuery only): no query, no bytes. Throws ResultGoneError
   * when the job or its result is gone (expired, another project, never existed). `rest` says where
   * the rows after them wait.
   */
  readPage?(place: ResultPlace, request: PageRequest): Promise<QueryResult>;
  /**
   * What `sql` is, by the engine's own parser and planner, without running it (BigQuery's dry run
   * bills nothing): an operator's endpoint SQL is checked with it before it is served. Throws
   * EngineError, its `detail.cause` the engine's words, when the engine cannot plan the SQL.
   */
  inspect?(sql: string): Promise<StatementShape>;
  /**
   * Epoch µs: every data file that had arrived by then is loaded, the instant a settled run's lag
   * counts back from (DuckDB serving LOCAL_DATA); undefined while a file there at startup is still
   * to load. Absent: the engine's data is current when queried (BigQuery, demo data).
   */
  loadedThrough?(): bigint | undefined;
  /** Resolves when the engine answers a trivial query (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * An engine failure the client may see. `message` is safe to return; `detail` (the engine's own
 * message, job id) goes to the log only.
 */
export class EngineError extends Error {
  readonly code: "engine_error" | "engine_timeout";
  readonly detail: { jobId?: string; cause?: string } | undefined;

  constructor(
    code: "engine_error" | "engine_timeout",
    message: string,
    detail?: { jobId?: string; cause?: string },
  ) {
    super(message);
    this.name = "EngineError";
    this.code = code;
    this.detail = detail;
  }
}

/** A kept result that cannot be read any more: the caller runs its query again. */
export class ResultGoneError extends Error {
  constructor(message = "The query's kept result is gone.") {
    super(message);
    this.name = "ResultGoneError";
  }
}
