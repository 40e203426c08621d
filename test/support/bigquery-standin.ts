// A local stand-in for the part of the BigQuery v2 REST API the service uses to run a query: jobs.query
// with optional job creation, answered complete in its reply or with a job to poll through
// jobs.getQueryResults, a result larger than one page kept in its job and read page by page (until
// expireJobs, as BigQuery drops a result after about a day), jobs.query's dry run (startup's check)
// and jobs.insert's (the check of an endpoint's SQL), and jobs.cancel (recorded in `cancelled`). It
// executes the SQL on the GoogleSQL reference harness over fixture tables with a pinned clock,
// records every request so tests can assert what
// the client sent, and injects faults on request. Wire shapes follow the BigQuery v2 REST API's
// answers to those calls.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { referencedParams } from "../../src/engines/sql-text.ts";
import { type SchemaField, sourceTables } from "../../src/schema.ts";
import { parseIsoTimestamp } from "../../src/time.ts";
import { type Column, GoogleSql, type Row } from "./googlesql.ts";
import { type PartitionedScan, scansOf } from "./time-bounds.ts";

export type StandInFault = { times?: number } & (
  | { kind: "invalidQuery" | "notFound" | "backendError" }
  | { kind: RefusalKind | "connectionReset" }
  | { kind: "slowJob"; polls: number }
);
type RefusalKind = "rateLimitExceeded" | "quotaExceeded" | "unauthenticated" | "accessDenied";
// Where each fault strikes, as BigQuery does it:
// - invalidQuery, notFound, backendError: jobs.query answers with the failure.
// - rateLimitExceeded, quotaExceeded, accessDenied: jobs.query is refused with 403 before the query
//   is read; unauthenticated: with 401 (a missing, invalid or expired token).
// - connectionReset: jobs.query's socket is cut.
// - slowJob: jobs.query creates a job and answers jobComplete:false; getQueryResults then says
//   jobComplete:false `polls` times (Infinity: until the job's jobTimeoutMs fails it, reason "timeout").

export interface StandInOptions {
  googleSqlPort: number;
  /** Rows per source table; tables left out are empty. */
  tables?: Record<string, Row[]>;
  /** CURRENT_TIMESTAMP() of every query, ISO 8601 with zone. */
  now: string;
  /** How long getQueryResults holds an unfinished job before answering (BigQuery: up to 10 s). */
  incompleteWaitMs?: number;
  /** More rows than this make BigQuery create a job to hold the result (its ~10 MB reply limit). */
  maxRowsWithoutJob?: number;
}

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/bigquery/v2/projects/p/jobs`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage["headers"];
  /** The parsed JSON body of a POST. */
  body?: QueryCall;
}

/** The parts of a jobs.query body (REST QueryRequest) the stand-in reads. */
export interface QueryCall {
  query: string;
  useLegacySql?: boolean;
  parameterMode?: string;
  queryParameters?: QueryParameter[];
  defaultDataset?: { projectId?: string; datasetId: string };
  location?: string;
  dryRun?: boolean;
  labels?: Record<string, string>;
  jobCreationMode?: string;
  jobTimeoutMs?: string;
  timeoutMs?: number;
  maximumBytesBilled?: string;
  maxResults?: number;
  formatOptions?: { useInt64Timestamp?: boolean };
}

/** The parts of a jobs.insert body (REST Job) the stand-in reads: a query job's dry run. */
export interface JobInsertCall {
  configuration: {
    dryRun?: boolean;
    query: Pick<QueryCall, "query" | "useLegacySql" | "parameterMode" | "queryParameters">;
  };
  jobReference?: { projectId?: string; location?: string };
}

/** A jobs.query call and what identified its answer. */
export interface AnsweredQuery {
  body: QueryCall;
  /** The queryId of an answer without a job; undefined once a job was created or it failed. */
  queryId?: string;
  /** The job BigQuery created for it, if any. */
  jobId?: string;
}

export interface QueryParameter {
  name?: string;
  parameterType: { type: string };
  parameterValue: { value?: string | number | boolean | null };
}

interface ApiFailure {
  status: number;
  reason: string;
  message: string;
}

/** A query's answer and the bytes the byte model bills it. */
type Answer = { columns: Column[]; rows: Row[]; bytesProcessed: number };
type Outcome = Answer | { failure: ApiFailure };

interface Job {
  reference: { projectId: string; jobId: string; location: string };
  outcome: Promise<Outcome>;
  incompletePolls: number;
  /** Epoch ms after which an unfinished job fails, from jobTimeoutMs. */
  deadline: number;
}

const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  500: "INTERNAL",
};

const INJECTED_FAILURES: Record<"invalidQuery" | "notFound" | "backendError", ApiFailure> = {
  invalidQuery: {
    status: 400,
    reason: "invalidQuery",
    message: "Syntax error: Unexpected identifier (injected) at [1:1]",
  },
  notFound: {
    status: 404,
    reason: "notFound",
    message: "Not found: Table standin:injected.missing was not found in location US",
  },
  backendError: {
    status: 500,
    reason: "backendError",
    message: "Error encountered during execution. Retrying may solve the problem. (injected)",
  },
};

const REFUSALS: Record<RefusalKind, ApiFailure> = {
  rateLimitExceeded: {
    status: 403,
    reason: "rateLimitExceeded",
    message: "Exceeded rate limits: too many api requests per user per method (injected)",
  },
  quotaExceeded: {
    status: 403,
    reason: "quotaExceeded",
    message: "Quota exceeded: Your project exceeded quota for free query bytes scanned (injected)",
  },
  unauthenticated: {
    status: 401,
    reason: "authError",
    message: "Request had invalid authentication credentials (injected)",
  },
  accessDenied: {
    status: 403,
    reason: "accessDenied",
    message:
      "Access Denied: Project standin: User does not have bigquery.jobs.create permission in project standin. (injected)",
  },
};

// BigQuery label keys and values: lowercase letters, digits, `_` and `-`, at most 63 characters.
const LABEL_VALUE = /^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$/u;
const LABEL_KEY = /^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$/u;

// With BIGQUERY_EMULATOR_HOST the client leaves out the /bigquery/v2 prefix.
const ROUTE = /^(?:\/bigquery\/v2)?\/projects\/([^/]+)\/queries(?:\/([^/]+))?$/;
const JOBS_ROUTE = /^(?:\/bigquery\/v2)?\/projects\/([^/]+)\/jobs$/;
const CANCEL_ROUTE = /^(?:\/bigquery\/v2)?\/projects\/([^/]+)\/jobs\/([^/]+)\/cancel$/;

export class BigQueryStandIn {
  /** Mutable between queries: the next job reads the current fixtures and clock. */
  tables: Record<string, Row[]>;
  now: string;
  /**
   * Datasets (`logs`) and tables (`logs.edge_logs`) that do not exist; every other dataset holds
   * every source table. A query naming one fails as BigQuery's does, dry runs included.
   */
  missing: string[] = [];
  /**
   * The stand-in's clock in epoch µs, for the engine that queries it: the engine computes the
   * windows it binds from "now", which here is `now`, as CURRENT_TIMESTAMP is.
   */
  readonly clock = (): bigint => {
    const micros = parseIsoTimestamp(this.now);
    if (micros === undefined) throw new Error(`the stand-in's now is no instant: ${this.now}`);
    return micros;
  };
  readonly requests: RecordedRequest[] = [];
  /** The jobs.query calls received, oldest first. */
  readonly queryCalls: AnsweredQuery[] = [];
  /** The job ids jobs.cancel was called for, oldest first. */
  readonly cancelled: string[] = [];
  private readonly faults: Required<StandInFault>[] = [];
  private readonly jobs = new Map<string, Job>();
  private readonly engine: GoogleSql;
  private readonly server: Server;
  private readonly incompleteWaitMs: number;
  private readonly maxRowsWithoutJob: number;
  private readonly sourceTables = sourceTables().map((table) => table.name);
  private nextId = 1;

  /** Use startBigQueryStandIn, which also starts listening. */
  constructor(options: StandInOptions) {
    this.tables = options.tables ?? {};
    this.now = options.now;
    this.incompleteWaitMs = options.incompleteWaitMs ?? 20;
    this.maxRowsWithoutJob = options.maxRowsWithoutJob ?? 100_000;
    this.engine = new GoogleSql(options.googleSqlPort);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        send(res, 500, { error: { code: 500, message: `stand-in bug: ${String(error)}` } });
      });
    });
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.server.listen(0, "127.0.0.1", resolve));
  }

  /** Base URL for the client's `apiEndpoint`. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next `times` (default 1) jobs meet this fault; faults queue in order. */
  injectFault(fault: StandInFault): void {
    this.faults.push({ times: 1, ...fault } as Required<StandInFault>);
  }

  /** The getQueryResults calls received, oldest first. */
  get resultCalls(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === "GET");
  }

  /** The getQueryResults calls that read a kept result's later page: no query, no bytes. */
  get pageReads(): RecordedRequest[] {
    return this.resultCalls.filter((r) => r.query.pageToken !== undefined);
  }

  /** Every kept job's result is gone, as BigQuery's after about a day: reading it is notFound. */
  expireJobs(): void {
    this.jobs.clear();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    this.engine.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const text = await readBody(req);
    const body = text ? (JSON.parse(text) as QueryCall) : undefined;
    this.requests.push({
      method: req.method ?? "",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      ...(body && { body }),
    });
    const route = ROUTE.exec(url.pathname);
    const [, projectId, jobId] = route ?? [];
    if (projectId && !jobId && req.method === "POST" && body) {
      return this.query(projectId, body, req, res);
    }
    if (jobId && req.method === "GET") return this.results(jobId, url.searchParams, res);
    const [, cancelProject, cancelJob] = CANCEL_ROUTE.exec(url.pathname) ?? [];
    if (cancelProject && cancelJob && req.method === "POST") {
      this.cancelled.push(cancelJob);
      this.jobs.delete(cancelJob);
      const reference = { projectId: cancelProject, jobId: cancelJob };
      return send(res, 200, {
        kind: "bigquery#jobCancelResponse",
        job: { jobReference: reference },
      });
    }
    const jobsProject = JOBS_ROUTE.exec(url.pathname)?.[1];
    const insert = body as JobInsertCall | undefined;
    if (jobsProject && req.method === "POST" && insert?.configuration?.dryRun) {
      return this.dryRunJob(jobsProject, insert, res);
    }
    sendFailure(res, {
      status: 404,
      reason: "notFound",
      message: `The stand-in does not serve ${req.method} ${url.pathname}`,
    });
  }

  private async query(
    projectId: string,
    body: QueryCall,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const call: AnsweredQuery = { body };
    this.queryCalls.push(call);
    const fault = this.takeFault();
    if (fault?.kind === "connectionReset") {
      req.socket.destroy();
      return;
    }
    if (fault && fault.kind in REFUSALS) {
      return sendFailure(res, REFUSALS[fault.kind as RefusalKind]);
    }
    const invalidLabel = Object.entries(body.labels ?? {}).find(
      ([key, value]) => !LABEL_KEY.test(key) || !LABEL_VALUE.test(value),
    );
    if (invalidLabel) {
      return sendFailure(res, {
        status: 400,
        reason: "invalid",
        message: `Label ${invalidLabel[0]}=${invalidLabel[1]} has invalid characters`,
      });
    }
    if (fault && fault.kind !== "slowJob") {
      return sendFailure(res, INJECTED_FAILURES[fault.kind as keyof typeof INJECTED_FAILURES]);
    }
    const location = body.location ?? "US";
    const absent = this.absentSource(projectId, body, location);
    if (absent) return sendFailure(res, absent);
    if (body.dryRun) return this.dryRun(projectId, body, location, res);
    const outcome = this.execute(body);
    const reference = { projectId, jobId: `job_${this.nextId++}`, location };
    const timeoutMs = Number(body.jobTimeoutMs ?? Number.POSITIVE_INFINITY);
    const job: Job = { reference, outcome, incompletePolls: 0, deadline: Date.now() + timeoutMs };
    if (fault?.kind === "slowJob") {
      this.jobs.set(reference.jobId, { ...job, incompletePolls: fault.polls });
      call.jobId = reference.jobId;
      return send(res, 200, {
        kind: "bigquery#queryResponse",
        jobReference: reference,
        jobComplete: false,
      });
    }
    const answer = await outcome;
    if ("failure" in answer) return sendFailure(res, answer.failure);
    const page = this.page(answer, new URLSearchParams(pageQuery(body)));
    // A result too large for one reply, or with more rows than maxResults, is kept in a job the
    // client pages through.
    if (answer.rows.length > this.maxRowsWithoutJob || page.pageToken !== undefined) {
      this.jobs.set(reference.jobId, job);
      call.jobId = reference.jobId;
      return send(res, 200, { kind: "bigquery#queryResponse", jobReference: reference, ...page });
    }
    call.queryId = `query_${this.nextId++}`;
    return send(res, 200, { kind: "bigquery#queryResponse", queryId: call.queryId, ...page });
  }

  /** BigQuery's notFound for the dataset, or the first table, of `missing` that the query reads. */
  private absentSource(
    projectId: string,
    body: QueryCall,
    location: string,
  ): ApiFailure | undefined {
    const dataset = body.defaultDataset?.datasetId ?? "";
    const notFound = (what: string): ApiFailure => ({
      status: 404,
      reason: "notFound",
      message: `Not found: ${what} was not found in location ${location}`,
    });
    if (this.missing.includes(dataset)) return notFound(`Dataset ${projectId}:${dataset}`);
    // The source tables are named bare (the default dataset's); \b keeps edge_logs out of
    // function_edge_logs, `_` being a word character.
    const table = this.sourceTables.find(
      (name) =>
        this.missing.includes(`${dataset}.${name}`) && new RegExp(`\\b${name}\\b`).test(body.query),
    );
    return table === undefined ? undefined : notFound(`Table ${projectId}:${dataset}.${table}`);
  }

  /** A dry run: the query is analysed, not run; BigQuery answers with its schema and no rows. */
  private async dryRun(
    projectId: string,
    body: QueryCall,
    location: string,
    res: ServerResponse,
  ): Promise<void> {
    let columns: Column[];
    try {
      columns = await this.engine.analyze(body.query);
    } catch (error) {
      return sendFailure(res, harnessFailure(error));
    }
    send(res, 200, {
      kind: "bigquery#queryResponse",
      jobReference: { projectId, location },
      schema: { fields: restFields(columns) },
      totalBytesProcessed: "0",
      jobComplete: true,
      cacheHit: false,
    });
  }

  /**
   * jobs.insert's dry run: the job BigQuery would run, planned and not run, its statistics naming
   * the statement's kind (SELECT for a query, SCRIPT for several statements). As on BigQuery, a
   * parameter the SQL names and the call does not declare fails the job.
   */
  private async dryRunJob(projectId: string, call: JobInsertCall, res: ServerResponse) {
    const { query, queryParameters = [] } = call.configuration.query;
    const declared = new Set(queryParameters.map((p) => p.name?.toLowerCase()));
    const undeclared = referencedParams(query).find((name) => !declared.has(name));
    if (undeclared !== undefined) {
      return sendFailure(res, {
        status: 400,
        reason: "invalidQuery",
        message: `Query parameter '${undeclared}' not found`,
      });
    }
    let statementType: string;
    let schema: { fields: SchemaField[] } | undefined;
    try {
      statementType = await this.engine.statementType(query);
      // As BigQuery does, a query's job names the schema its result would have.
      if (statementType === "SELECT")
        schema = { fields: restFields(await this.engine.analyze(query)) };
    } catch (error) {
      return sendFailure(res, harnessFailure(error));
    }
    const location = call.jobReference?.location ?? "US";
    send(res, 200, {
      kind: "bigquery#job",
      jobReference: { projectId, location },
      configuration: call.configuration,
      status: { state: "DONE" },
      statistics: {
        totalBytesProcessed: "0",
        query: { statementType, totalBytesProcessed: "0", ...(schema && { schema }) },
      },
    });
  }

  private takeFault(): Required<StandInFault> | undefined {
    const fault = this.faults[0];
    if (fault && --fault.times <= 0) this.faults.shift();
    return fault;
  }

  private async execute(body: QueryCall): Promise<Outcome> {
    const { query, queryParameters = [], parameterMode } = body;
    const params: Record<string, string | null> = {};
    for (const p of queryParameters) {
      if (
        parameterMode?.toLowerCase() !== "named" ||
        !p.name ||
        p.parameterType.type !== "STRING"
      ) {
        return invalidQuery("The stand-in binds named STRING parameters only");
      }
      const value = p.parameterValue.value;
      params[p.name.toLowerCase()] = value === null || value === undefined ? null : String(value);
    }
    const missing = referencedParams(query).find((name) => !(name in params));
    if (missing) return invalidQuery(`Query parameter '${missing}' not found`);
    try {
      const answer = await this.engine.query(query, { tables: this.tables, params, now: this.now });
      const scans = await scansOf(this.engine, query);
      return { ...answer, bytesProcessed: this.bytesScanned(scans, params) };
    } catch (error) {
      return { failure: harnessFailure(error) };
    }
  }

  /**
   * The bytes BigQuery bills a query, modelled on day-partitioned source tables: each scan reads the
   * UTC days between the bounds its filter puts on `timestamp` in prunable form (time-bounds.ts),
   * bound by the parameters' values, or every day the table holds when it has no such bound. A
   * day's bytes are its rows' JSON size.
   */
  private bytesScanned(scans: PartitionedScan[], params: Record<string, string | null>): number {
    let bytes = 0;
    for (const { table, bounds } of scans) {
      const edge = (side: "lower" | "upper") =>
        bounds
          .filter((b) => b.side === side)
          .map((b) => parseIsoTimestamp(params[b.param] ?? ""))
          .filter((micros) => micros !== undefined)
          .map((micros) => micros / DAY_MICROS);
      const [lowers, uppers] = [edge("lower"), edge("upper")];
      const first = lowers.length > 0 ? lowers.reduce((a, b) => (a > b ? a : b)) : undefined;
      const last = uppers.length > 0 ? uppers.reduce((a, b) => (a < b ? a : b)) : undefined;
      for (const row of this.tables[table] ?? []) {
        const day = (parseIsoTimestamp(String(row.timestamp)) ?? 0n) / DAY_MICROS;
        if ((first === undefined || day >= first) && (last === undefined || day <= last)) {
          bytes += Buffer.byteLength(JSON.stringify(row));
        }
      }
    }
    return bytes;
  }

  private async results(jobId: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
    const job = this.jobs.get(jobId);
    if (!job) {
      return sendFailure(res, {
        status: 404,
        reason: "notFound",
        message: `Not found: Job ${jobId}`,
      });
    }
    const { reference } = job;
    if (job.incompletePolls > 0) {
      const wait = Math.min(this.incompleteWaitMs, Math.max(0, job.deadline - Date.now()));
      await new Promise((resolve) => setTimeout(resolve, wait).unref());
      if (Date.now() >= job.deadline) {
        job.incompletePolls = 0;
        job.outcome = Promise.resolve({
          failure: { status: 400, reason: "timeout", message: "Job timed out (jobTimeoutMs)" },
        });
      } else {
        job.incompletePolls -= 1;
        send(res, 200, {
          kind: "bigquery#getQueryResultsResponse",
          jobReference: reference,
          jobComplete: false,
        });
        return;
      }
    }
    const outcome = await job.outcome;
    if ("failure" in outcome) return sendFailure(res, outcome.failure);
    send(res, 200, {
      kind: "bigquery#getQueryResultsResponse",
      jobReference: reference,
      ...this.page(outcome, query),
    });
  }

  /** The rows of one page and the answer's metadata, as jobs.query and getQueryResults give them. */
  private page(outcome: Answer, query: URLSearchParams) {
    const start = Number(query.get("pageToken") ?? query.get("startIndex") ?? 0);
    const pageSize = Number(query.get("maxResults") ?? outcome.rows.length);
    const end = Math.min(start + pageSize, outcome.rows.length);
    const fields = restFields(outcome.columns);
    const timestamps =
      query.get("formatOptions.useInt64Timestamp") === "true" ? "micros" : "seconds";
    const page = outcome.rows.slice(start, end).map((row) => ({
      f: outcome.columns.map((c, i) => cell(row[c.name], fields[i] as SchemaField, timestamps)),
    }));
    return {
      schema: { fields },
      totalRows: String(outcome.rows.length),
      ...(page.length > 0 && { rows: page }),
      ...(end < outcome.rows.length && { pageToken: String(end) }),
      // A later page of a kept result is read, not queried: it bills nothing.
      totalBytesProcessed: query.has("pageToken") ? "0" : String(outcome.bytesProcessed),
      jobComplete: true,
      cacheHit: false,
    };
  }
}

const DAY_MICROS = 86_400_000_000n;

/** A stand-in listening on a free loopback port; `close()` it after the test. */
export async function startBigQueryStandIn(options: StandInOptions): Promise<BigQueryStandIn> {
  const standIn = new BigQueryStandIn(options);
  await standIn.listen();
  return standIn;
}

/** jobs.query's paging and format options, in getQueryResults' query-string form. */
function pageQuery(body: QueryCall): Record<string, string> {
  return {
    ...(body.maxResults !== undefined && { maxResults: String(body.maxResults) }),
    ...(body.formatOptions?.useInt64Timestamp && { "formatOptions.useInt64Timestamp": "true" }),
  };
}

/** The reference engine's refusal as BigQuery words it: an unknown table, or an invalid query. */
function harnessFailure(error: unknown): ApiFailure {
  const message = (error as Error).message;
  return message.startsWith("Table not found")
    ? { status: 404, reason: "notFound", message: `Not found: ${message}` }
    : { status: 400, reason: "invalidQuery", message };
}

function invalidQuery(message: string): Outcome {
  return { failure: { status: 400, reason: "invalidQuery", message } };
}

// ---------------------------------------------------------------------------------------------
// Result encoding: harness values (already in the service's wire format) → BigQuery REST cells

type TypeProto = Column["type"];

// BigQuery's REST schema uses the legacy type names.
const REST_TYPES: Record<string, string> = {
  TYPE_STRING: "STRING",
  TYPE_INT64: "INTEGER",
  TYPE_DOUBLE: "FLOAT",
  TYPE_BOOL: "BOOLEAN",
  TYPE_TIMESTAMP: "TIMESTAMP",
  TYPE_DATETIME: "DATETIME",
  TYPE_STRUCT: "RECORD",
};

function restFields(columns: Column[]): SchemaField[] {
  // BigQuery names unnamed columns f0_, f1_, ...; the harness leaves them empty.
  return columns.map((c, i) => schemaField({ ...c, name: c.name || `f${i}_` }));
}

function schemaField(column: Column): SchemaField {
  const repeated = column.type.type_kind === "TYPE_ARRAY";
  const type = repeated ? (column.type.array_type?.element_type as TypeProto) : column.type;
  const restType = REST_TYPES[type.type_kind];
  if (!restType) throw new Error(`the stand-in cannot return ${type.type_kind}`);
  const fields = type.struct_type?.field.map((f) =>
    schemaField({ name: f.field_name, type: f.field_type }),
  );
  return {
    name: column.name,
    type: restType,
    mode: repeated ? "REPEATED" : "NULLABLE",
    ...(fields && { fields }),
  };
}

type Cell = { v: string | null | Cell[] | { f: Cell[] } };

/**
 * A REST cell. TIMESTAMP is epoch microseconds when the call asks for
 * formatOptions.useInt64Timestamp, else BigQuery's default: float seconds in E notation.
 */
function cell(value: unknown, field: SchemaField, timestamps: "micros" | "seconds"): Cell {
  if (value === null || value === undefined) return { v: null };
  if (field.mode === "REPEATED") {
    return {
      v: (value as unknown[]).map((e) => cell(e, { ...field, mode: "NULLABLE" }, timestamps)),
    };
  }
  if (field.type === "RECORD") {
    const record = value as Record<string, unknown>;
    return { v: { f: (field.fields ?? []).map((f) => cell(record[f.name], f, timestamps)) } };
  }
  if (field.type === "TIMESTAMP") {
    const micros = parseIsoTimestamp(value as string) as bigint;
    return { v: timestamps === "micros" ? String(micros) : (Number(micros) / 1e6).toExponential() };
  }
  return { v: String(value) };
}

// ---------------------------------------------------------------------------------------------
// HTTP

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      text += chunk;
    });
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=UTF-8" });
  res.end(JSON.stringify(body));
}

function sendFailure(res: ServerResponse, { status, reason, message }: ApiFailure): void {
  send(res, status, {
    error: {
      code: status,
      message,
      errors: [{ message, domain: "global", reason }],
      status: STATUS_NAMES[status] ?? "UNKNOWN",
    },
  });
}
