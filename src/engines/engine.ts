// What every query engine offers the service: run one endpoint query with bound STRING params.

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** A result row in the wire format of docs/api.md (TIMESTAMP as RFC 3339 µs string, INT64 as number). */
export type Row = Record<string, JsonValue>;

export interface QueryRequest {
  /** Endpoint name: job label and log field. */
  endpoint: string;
  /** SQL in the engine's own dialect, with named parameters. */
  sql: string;
  /** Every parameter the endpoint declares; null when absent. Always bound, never spliced. */
  params: Record<string, string | null>;
  /** Rows beyond this are not fetched; `truncated` says so. */
  maxRows: number;
  /** What caused the query: a caller's request, the cache's background refresh, a follow stream. */
  trigger?: "request" | "refresh" | "follow";
  /** Who caused it (a credential's name), when a caller did: the gate's fair share, the job's label. */
  credential?: string;
  /** Epoch ms by which the answer is due; the engine stops the query then. Default: its own timeout. */
  deadline?: number;
  /** Aborted when nobody waits for the answer any more (deadline, shutdown): stop the work. */
  signal?: AbortSignal;
}

export interface QueryResult {
  rows: Row[];
  truncated: boolean;
  /** BigQuery's job id when it created a job, else its query id; and bytes processed: for the log. */
  jobId?: string;
  queryId?: string;
  bytesProcessed?: number;
}

export type Dialect = "bigquery" | "duckdb";

export interface QueryEngine {
  readonly dialect: Dialect;
  run(request: QueryRequest): Promise<QueryResult>;
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
