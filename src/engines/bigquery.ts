// The BigQuery engine: runs an endpoint's SQL in one jobs.query call through the official client, reads
// one page of at most maxRows rows, and turns every failure into an EngineError safe to show a caller.
// A query asked to keep its result leaves the rest in its job, whose pages are read later without a
// new query (jobs.getQueryResults with a page token).
import { setTimeout as sleep } from "node:timers/promises";
import { BigQuery, type BigQueryOptions, common, type Job } from "@google-cloud/bigquery";
import { PassThroughClient } from "google-auth-library";
import { sourceTables } from "../schema.ts";
import { labelValue } from "../telemetry/attribution.ts";
import { dateToMicros, parseIsoTimestamp } from "../time.ts";
import { decodeRows, type RestField, type RestRow, resultColumnOf } from "./bigquery-rows.ts";
import {
  EngineError,
  type PageRequest,
  type QueryEngine,
  type QueryRequest,
  type QueryResult,
  ResultGoneError,
  type ResultPlace,
  type Row,
  type StatementShape,
} from "./engine.ts";
import { referencedParams } from "./sql-text.ts";

/** Whole-query retries of rate-limit and backend failures; see docs/engines.md, "Timeouts and retries". */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Delay before the first retry; it doubles per retry up to maxDelayMs, half of it jittered. */
  initialDelayMs: number;
  maxDelayMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { attempts: 3, initialDelayMs: 1000, maxDelayMs: 4000 };

export interface BigQueryEngineOptions {
  projectId: string;
  /** Default dataset of every query: the SQL names the source tables bare. */
  dataset: string;
  location?: string;
  /** An emulator or the test stand-in; requests then carry no credentials. */
  apiEndpoint?: string;
  /** Budget of one run, retries included; also sent as the job's jobTimeoutMs. */
  jobTimeoutMs: number;
  /** int64 as a decimal string, as BigQuery takes it. */
  maximumBytesBilled?: string;
  retry?: RetryPolicy;
  /** Overrides the credentials; by default ADC, or none with apiEndpoint. */
  authClient?: BigQueryOptions["authClient"];
  /**
   * "now" in epoch microseconds, read once per query: the window the query reads is computed from
   * it and bound (endpoints/window.ts); the SQL reads no clock of its own. Default: the system clock.
   */
  now?: () => bigint;
}

export interface BigQueryEngine extends QueryEngine {
  /**
   * Proves with one dry run, which BigQuery does not bill, that the credentials may query every
   * source table of the dataset; rejects with one line saying what is wrong.
   */
  checkSources(): Promise<void>;
}

export function createBigQueryEngine(options: BigQueryEngineOptions): BigQueryEngine {
  const retry = options.retry ?? DEFAULT_RETRY;
  const clock = options.now ?? (() => dateToMicros(new Date()));
  const client = new BigQuery({
    projectId: options.projectId,
    apiEndpoint: options.apiEndpoint,
    authClient: options.authClient ?? (options.apiEndpoint ? new PassThroughClient() : undefined),
    // Retries are whole-query (below): re-polling a failed job cannot help, and the client's own
    // backoff (2, 4, 8 s) would spend half the job timeout on one HTTP call.
    retryOptions: { autoRetry: false },
  });

  /**
   * One jobs.query call: BigQuery answers a short query in its reply without creating a job. When
   * it does create one (long-running, large result), the job is polled as jobs.getQueryResults.
   */
  async function runQuery(request: QueryRequest, deadline: number, attempt: Attempt) {
    const remainingMs = Math.max(1, deadline - Date.now());
    const answer = await jobsQuery({
      query: request.sql,
      useLegacySql: false,
      parameterMode: "NAMED",
      // Every parameter is STRING; null binds as a typed NULL.
      queryParameters: Object.entries(request.params).map(([name, value]) => ({
        name,
        parameterType: { type: "STRING" },
        parameterValue: { value },
      })),
      defaultDataset: { projectId: options.projectId, datasetId: options.dataset },
      location: options.location,
      // The query carries what caused it and who, as metrics and logs do.
      labels: {
        endpoint: labelValue(request.endpoint),
        ...(request.trigger && { trigger: request.trigger }),
        ...(request.credential && { credential: labelValue(request.credential) }),
      },
      jobCreationMode: "JOB_CREATION_OPTIONAL",
      // The job's own limit, which the client's query() cannot send without leaving this fast path.
      jobTimeoutMs: String(remainingMs),
      // How long this call may wait for the answer before BigQuery replies with a job to poll.
      timeoutMs: Math.min(remainingMs, MAX_WAIT_PER_CALL_MS),
      maximumBytesBilled: options.maximumBytesBilled,
      maxResults: request.maxRows,
      // Microsecond integers, which decodeRows reads.
      formatOptions: { useInt64Timestamp: true },
    });
    const reference = answer.jobReference;
    attempt.jobId = reference?.jobId;
    const ids = {
      ...(attempt.jobId && { jobId: attempt.jobId }),
      ...(answer.queryId && { queryId: answer.queryId }),
    };
    const location = reference?.location ?? options.location;
    const page =
      answer.jobComplete === false && reference?.jobId
        ? await cancelledWhenLeft(
            client.job(reference.jobId, { location }),
            request.signal,
            (job) => resultsPage(job, request.maxRows, attempt.signal),
          )
        : pageOf(answer);
    // BigQuery keeps a result with more rows than one reply in the job it then creates.
    const rest =
      request.keepResult && page.pageToken && reference?.jobId
        ? { jobId: reference.jobId, ...(location && { location }), pageToken: page.pageToken }
        : undefined;
    return { ...page, ...ids, ...(rest && { rest }) };
  }

  function jobsQuery(body: JobsQueryRequest | DryRunRequest): Promise<JobsQueryResponse> {
    return new Promise((resolve, reject) => {
      client.request({ method: "POST", uri: "/queries", json: body }, (error, response) =>
        error ? reject(error) : resolve(response as JobsQueryResponse),
      );
    });
  }

  /**
   * jobs.insert's dry run, which plans the SQL, bills nothing and names the statement's kind
   * (jobs.query's dry run does not). Every parameter the SQL names is declared, as the service binds
   * it: STRING.
   */
  async function inspect(sql: string): Promise<StatementShape> {
    const params = referencedParams(sql);
    const body = {
      configuration: {
        dryRun: true,
        query: {
          query: sql,
          useLegacySql: false,
          parameterMode: "NAMED",
          queryParameters: params.map((name) => ({
            name,
            parameterType: { type: "STRING" },
            parameterValue: { value: null },
          })),
          defaultDataset: { projectId: options.projectId, datasetId: options.dataset },
        },
      },
      jobReference: { projectId: options.projectId, location: options.location },
    };
    const job = await withRetries(
      Date.now() + options.jobTimeoutMs,
      undefined,
      () =>
        new Promise<DryRunJob>((resolve, reject) =>
          client.request({ method: "POST", uri: "/jobs", json: body }, (error, response) =>
            error ? reject(error) : resolve(response as DryRunJob),
          ),
        ),
      (failure) =>
        new EngineError("engine_error", "BigQuery's dry run refused the SQL.", {
          cause: failure.text,
        }),
    );
    const query = job.statistics?.query;
    const fields = query?.schema?.fields;
    return {
      kind: query?.statementType ?? "OTHER",
      ...(fields && { columns: fields.map(resultColumnOf) }),
    };
  }

  /**
   * Runs `work` until it succeeds, fails for good or the deadline passes: transient failures are
   * tried again. A final failure is thrown as `fail` makes it.
   */
  async function withRetries<T>(
    deadline: number,
    callerSignal: AbortSignal | undefined,
    work: (attempt: Attempt) => Promise<T>,
    fail: (failure: Failure, attempts: number, jobId?: string) => Error,
  ): Promise<T> {
    for (let attemptNumber = 1; ; attemptNumber++) {
      const timeout = AbortSignal.timeout(Math.max(0, deadline - Date.now()));
      const attempt: Attempt = {
        signal: callerSignal ? AbortSignal.any([timeout, callerSignal]) : timeout,
      };
      try {
        return await untilAborted(work(attempt), attempt.signal);
      } catch (error) {
        const failure = await diagnose(error);
        const delay = backoff(retry, attemptNumber);
        if (
          !callerSignal?.aborted &&
          failure.retryable &&
          attemptNumber < retry.attempts &&
          Date.now() + delay < deadline
        ) {
          await sleep(delay);
          continue;
        }
        throw fail(failure, attemptNumber, attempt.jobId);
      }
    }
  }

  /**
   * Classifies a failure; one that came before BigQuery answered is the credentials' when they
   * cannot give a token now (the client reports a credential failure as it found it: a missing
   * file, no default credentials, a refused refresh), else the client's configuration.
   */
  async function diagnose(error: unknown): Promise<Failure> {
    const failure = classify(error);
    if (failure.cause !== "configuration") return failure;
    try {
      await client.authClient.getAccessToken();
      return failure;
    } catch (authError) {
      const auth = classify(authError);
      if (auth.cause === "network") return auth;
      return { cause: "credentials", retryable: false, reason: "credentials", text: auth.text };
    }
  }

  async function run(asked: QueryRequest): Promise<QueryResult> {
    const deadline = asked.deadline ?? Date.now() + options.jobTimeoutMs;
    // One reading of now for the query and its retries: its window is bound as parameters.
    const request = { ...asked, params: asked.window?.(asked.params, clock()) ?? asked.params };
    const page = await withRetries(
      deadline,
      request.signal,
      (attempt) => runQuery(request, deadline, attempt),
      (failure, attempts, jobId) => engineError(failure, jobId, attempts, options.jobTimeoutMs),
    );
    // Decoding is ours: a failure here is a bug (500), not BigQuery's.
    const { fields, rows, pageToken: _next, ...result } = page;
    return { rows: decodeRows(fields, rows), ...result };
  }

  /** A kept result's page: a read of the job's result, no query; a job BigQuery no longer has is gone. */
  async function readPage(place: ResultPlace, request: PageRequest): Promise<QueryResult> {
    const deadline = request.deadline ?? Date.now() + options.jobTimeoutMs;
    const job = client.job(place.jobId, { location: place.location ?? options.location });
    const page = await withRetries(
      deadline,
      request.signal,
      (attempt) => {
        attempt.jobId = place.jobId;
        return resultsPage(job, request.maxRows, attempt.signal, place.pageToken);
      },
      (failure, attempts, jobId) =>
        failure.cause === "notFound"
          ? new ResultGoneError(`BigQuery no longer has the result of job ${place.jobId}.`)
          : engineError(failure, jobId, attempts, options.jobTimeoutMs),
    );
    // The job's bytes were billed once, by its query: a page read processes none.
    const { fields, pageToken } = page;
    const rows = decodeRows(fields, page.rows);
    const held = request.walk ? rows.filter(heldBy(request.window, request.walk)) : rows;
    const more = Boolean(pageToken) && held.length === rows.length;
    return {
      rows: held,
      truncated: more,
      jobId: place.jobId,
      ...(more && { rest: { ...place, pageToken: pageToken as string } }),
    };
  }

  /** Whether a walk's row is still in its window now: after the window's start (retention's edge). */
  function heldBy(
    window: QueryRequest["window"],
    params: QueryRequest["params"],
  ): (row: Row) => boolean {
    const start = window?.(params, clock()).window_start;
    const edge = start ? parseIsoTimestamp(start) : undefined;
    if (edge === undefined) return () => true;
    return (row) => {
      const at = parseIsoTimestamp(String(row.timestamp));
      return at === undefined || at > edge;
    };
  }

  async function checkSources(): Promise<void> {
    const tables = sourceTables().map((table) => table.name);
    await withRetries(
      Date.now() + options.jobTimeoutMs,
      undefined,
      () =>
        jobsQuery({
          query: `SELECT 1 FROM ${tables.join(", ")} LIMIT 0`,
          useLegacySql: false,
          dryRun: true,
          defaultDataset: { projectId: options.projectId, datasetId: options.dataset },
          location: options.location,
        }),
      (failure) => new Error(sourcesProblem(failure, options, tables)),
    );
  }

  return {
    dialect: "bigquery",
    run,
    readPage,
    inspect,
    async ping() {
      await run({ endpoint: "ping", sql: "SELECT 1", params: {}, maxRows: 1 });
    },
    checkSources,
    async close() {},
  };
}

interface Attempt {
  /** Aborts at the run's deadline, or when the caller stops waiting. */
  signal: AbortSignal;
  jobId?: string;
}

type FirstPage = Omit<QueryResult, "rows"> & {
  fields: RestField[];
  rows: RestRow[];
  /** Where the rows after these wait in the job, if BigQuery kept them. */
  pageToken?: string;
};

/** BigQuery holds one call at most this long while a query runs, then answers "not yet". */
const MAX_WAIT_PER_CALL_MS = 10_000;

/** The parts of the REST QueryRequest (jobs.query) the service sends. */
interface JobsQueryRequest {
  query: string;
  useLegacySql: false;
  parameterMode: "NAMED";
  queryParameters: {
    name: string;
    parameterType: { type: "STRING" };
    parameterValue: { value: string | null };
  }[];
  defaultDataset: { projectId: string; datasetId: string };
  location?: string;
  labels: Record<string, string>;
  jobCreationMode: "JOB_CREATION_OPTIONAL";
  jobTimeoutMs: string;
  timeoutMs: number;
  maximumBytesBilled?: string;
  maxResults: number;
  formatOptions: { useInt64Timestamp: true };
}

/** A jobs.query call that BigQuery only plans: it checks access, tables and SQL, and bills nothing. */
interface DryRunRequest {
  query: string;
  useLegacySql: false;
  dryRun: true;
  defaultDataset: { projectId: string; datasetId: string };
  location?: string;
}

/** The part of a dry-run job (jobs.insert's answer) the service reads. */
interface DryRunJob {
  statistics?: { query?: { statementType?: string; schema?: { fields?: RestField[] } } };
}

/** The parts of jobs.query's and jobs.getQueryResults' answers the service reads. */
interface ResultsPage {
  jobComplete?: boolean;
  schema?: { fields?: RestField[] };
  rows?: RestRow[];
  pageToken?: string;
  totalBytesProcessed?: string;
}

interface JobsQueryResponse extends ResultsPage {
  /** Present only when BigQuery created a job. */
  jobReference?: { jobId?: string; location?: string };
  /** Identifies a query answered without a job. */
  queryId?: string;
}

/** A complete answer's page; later pages are read only when asked for (readPage). */
function pageOf(answer: ResultsPage): FirstPage {
  return {
    fields: answer.schema?.fields ?? [],
    rows: answer.rows ?? [],
    truncated: Boolean(answer.pageToken),
    ...(answer.pageToken && { pageToken: answer.pageToken }),
    ...(answer.totalBytesProcessed && { bytesProcessed: Number(answer.totalBytesProcessed) }),
  };
}

/** Waits for a job BigQuery created, then reads its page at `pageToken` (the first without). */
async function resultsPage(
  job: Job,
  maxRows: number,
  signal: AbortSignal,
  pageToken?: string,
): Promise<FirstPage> {
  for (;;) {
    // autoPaginate:false returns an unfinished job's answer instead of polling in the client, so
    // polling stops at our deadline. BigQuery holds each call up to 10 s while the job runs.
    const [rows, , response] = await job.getQueryResults({
      maxResults: maxRows,
      ...(pageToken && { pageToken }),
      autoPaginate: false,
      skipParsing: true,
      "formatOptions.useInt64Timestamp": true,
    });
    if (response?.jobComplete !== false) return pageOf({ ...response, rows } as ResultsPage);
    signal.throwIfAborted();
  }
}

/**
 * `work` on a job BigQuery is still running; when `signal` aborts meanwhile (nobody waits for the
 * answer any more: the caller left, the deadline passed, shutdown) the job is cancelled, so BigQuery
 * stops work whose result nobody reads. Cancelling is best effort: its failure changes nothing.
 */
async function cancelledWhenLeft<T>(
  job: Job,
  signal: AbortSignal | undefined,
  work: (job: Job) => Promise<T>,
): Promise<T> {
  const cancel = () => {
    job.cancel().catch(() => {});
  };
  if (signal?.aborted) cancel();
  else signal?.addEventListener("abort", cancel, { once: true });
  try {
    return await work(job);
  } finally {
    signal?.removeEventListener("abort", cancel);
  }
}

/** Settles as `work` does, or rejects with the signal's reason when it aborts first. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  // A failure after the deadline concerns nobody; unobserved, it would crash the process.
  work.catch(() => {});
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function backoff(policy: RetryPolicy, attemptNumber: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attemptNumber - 1));
  return ceiling / 2 + (Math.random() * ceiling) / 2;
}

// ---------------------------------------------------------------------------------------------
// Failures

/** What went wrong, in the terms a caller or an operator acts on. */
type Cause =
  | "timeout"
  | "credentials"
  | "permission"
  | "notFound"
  | "quota"
  | "unavailable"
  | "network"
  | "invalidQuery"
  | "bytesLimit"
  | "configuration"
  | "other";

interface Failure {
  cause: Cause;
  /** The same call may succeed a moment later: BigQuery or the network asked for patience. */
  retryable: boolean;
  /** BigQuery's reason (`invalidQuery`, ...), HTTP status or network error code. */
  reason: string;
  /** The engine's own text: for the log only. */
  text: string;
}

const REASON_CAUSES: Record<string, Cause> = {
  timeout: "timeout",
  accessDenied: "permission",
  notFound: "notFound",
  rateLimitExceeded: "quota",
  userRateLimitExceeded: "quota",
  quotaExceeded: "quota",
  backendError: "unavailable",
  internalError: "unavailable",
  invalidQuery: "invalidQuery",
  bytesBilledLimitExceeded: "bytesLimit",
};
const STATUS_CAUSES: Record<number, Cause> = {
  401: "credentials",
  403: "permission",
  404: "notFound",
  408: "unavailable",
  429: "quota",
  500: "unavailable",
  502: "unavailable",
  503: "unavailable",
  504: "unavailable",
};
const RETRYABLE_REASONS = new Set([
  "rateLimitExceeded",
  "userRateLimitExceeded",
  "backendError",
  "internalError",
]);
const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
/** Network failures worth another attempt; the others (a name that does not resolve) stay. */
const RETRYABLE_NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
]);
const NETWORK_CODES = new Set([
  ...RETRYABLE_NETWORK_CODES,
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
]);
const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN"]);

const CAUSE_MESSAGES: Record<Exclude<Cause, "timeout">, string> = {
  credentials:
    "BigQuery did not accept the service's credentials (missing, invalid or expired); see the service log.",
  permission: "The service's BigQuery credentials may not run this endpoint's query.",
  notFound: "A table or dataset this endpoint reads does not exist in BigQuery.",
  quota: "The service's BigQuery quota or rate limit is used up; try again shortly.",
  unavailable: "BigQuery is temporarily unavailable; try again shortly.",
  network: "The service could not reach BigQuery over the network; try again shortly.",
  invalidQuery: "BigQuery rejected the endpoint's query as invalid.",
  bytesLimit: "The query would scan more bytes than the service allows.",
  configuration:
    "The service could not reach BigQuery with its configuration; see the service log.",
  other: "BigQuery could not run the endpoint's query.",
};

function classify(error: unknown): Failure {
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return { cause: "timeout", retryable: false, reason: "deadline", text: error.message };
  }
  // Nobody waits for the answer any more (shutdown, a caller gone): nothing to diagnose.
  if (error instanceof DOMException && error.name === "AbortError") {
    return { cause: "other", retryable: false, reason: "aborted", text: error.message };
  }
  if (error instanceof common.ApiError) {
    const reason = error.errors?.find((e) => e.reason)?.reason ?? String(error.code ?? "unknown");
    const status = error.code ?? 0;
    return {
      // BigQuery's reason is the finer verdict (a 403 may be a rate limit); the status, the fallback.
      cause: REASON_CAUSES[reason] ?? STATUS_CAUSES[status] ?? "other",
      retryable: RETRYABLE_REASONS.has(reason) || RETRYABLE_STATUSES.has(status),
      reason,
      text: error.message,
    };
  }
  const code = (error as { code?: unknown } | null)?.code;
  const text = (error as Error | null)?.message ?? String(error);
  if (typeof code === "string" && NETWORK_CODES.has(code)) {
    return { cause: "network", retryable: RETRYABLE_NETWORK_CODES.has(code), reason: code, text };
  }
  // The client failed before BigQuery answered: credentials, configuration, a malformed reply.
  return { cause: "configuration", retryable: false, reason: "client", text };
}

function engineError(
  failure: Failure,
  jobId: string | undefined,
  attempts: number,
  jobTimeoutMs: number,
): EngineError {
  const tries = attempts > 1 ? ` (after ${attempts} attempts)` : "";
  const detail = { ...(jobId && { jobId }), cause: `${failure.reason}: ${failure.text}${tries}` };
  if (failure.cause === "timeout") {
    return new EngineError(
      "engine_timeout",
      `BigQuery did not finish the query within the ${jobTimeoutMs} ms job timeout.`,
      detail,
    );
  }
  return new EngineError("engine_error", CAUSE_MESSAGES[failure.cause], detail);
}

/** The one line startup prints when the source tables cannot be queried: what to fix, and where. */
function sourcesProblem(
  failure: Failure,
  options: BigQueryEngineOptions,
  tables: string[],
): string {
  const { projectId, dataset } = options;
  const said = failure.text.replace(/\s+/g, " ").trim();
  switch (failure.cause) {
    case "credentials":
      return `BigQuery did not accept the service's credentials (${said}); set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or run gcloud auth application-default login`;
    case "permission":
      return `the service's BigQuery credentials lack permission to query ${projectId}:${dataset} (${said}); they need the BigQuery Job User role on project ${projectId} and BigQuery Data Viewer on the dataset`;
    case "notFound":
      return `BigQuery ${missingSource(said) ?? `dataset ${projectId}:${dataset} or one of its tables ${tables.join(", ")} does not exist`}; check BIGQUERY_PROJECT_ID, BIGQUERY_DATASET and BIGQUERY_LOCATION`;
    case "network": {
      const endpoint = options.apiEndpoint ?? "https://bigquery.googleapis.com";
      const dns = DNS_CODES.has(failure.reason) ? "its host name does not resolve, DNS " : "";
      return `cannot reach BigQuery at ${endpoint} (${dns}${failure.reason})`;
    }
    case "timeout":
      return `BigQuery did not answer the startup check within ${options.jobTimeoutMs} ms (BIGQUERY_JOB_TIMEOUT_MS)`;
    default:
      return `BigQuery refused the startup check (${failure.reason}: ${said})`;
  }
}

/** The dataset or table a notFound names, as BigQuery writes it: `Not found: Table p:d.t was not found in location US`. */
function missingSource(text: string): string | undefined {
  const found =
    /Not found: (Dataset|Table) ([\w.:-]+)(?: was not found in location ([\w-]+))?/.exec(text);
  if (!found) return undefined;
  const [, kind = "", name, location] = found;
  return `${kind.toLowerCase()} ${name} does not exist${location ? ` in location ${location}` : ""}`;
}
