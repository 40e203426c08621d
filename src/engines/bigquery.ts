// The BigQuery engine: runs an endpoint's SQL in one jobs.query call through the official client, reads
// one page of at most maxRows rows, and turns every failure into an EngineError safe to show a caller.
import { setTimeout as sleep } from "node:timers/promises";
import { BigQuery, type BigQueryOptions, common, type Job } from "@google-cloud/bigquery";
import { PassThroughClient } from "google-auth-library";
import { labelValue } from "../telemetry/attribution.ts";
import { decodeRows, type RestField, type RestRow } from "./bigquery-rows.ts";
import { EngineError, type QueryEngine, type QueryRequest, type QueryResult } from "./engine.ts";

/** Whole-query retries of rate-limit and backend failures; see README "BigQuery timeouts and retries". */
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
}

export function createBigQueryEngine(options: BigQueryEngineOptions): QueryEngine {
  const retry = options.retry ?? DEFAULT_RETRY;
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
      // DESIGN: the query carries what caused it and who, as metrics and logs do.
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
    attempt.jobId = answer.jobReference?.jobId;
    const ids = {
      ...(attempt.jobId && { jobId: attempt.jobId }),
      ...(answer.queryId && { queryId: answer.queryId }),
    };
    if (answer.jobComplete === false && answer.jobReference?.jobId) {
      const job = client.job(answer.jobReference.jobId, {
        location: answer.jobReference.location ?? options.location,
      });
      return { ...(await firstPage(job, request.maxRows, attempt.signal)), ...ids };
    }
    return { ...pageOf(answer), ...ids };
  }

  function jobsQuery(body: JobsQueryRequest): Promise<JobsQueryResponse> {
    return new Promise((resolve, reject) => {
      client.request({ method: "POST", uri: "/queries", json: body }, (error, response) =>
        error ? reject(error) : resolve(response as JobsQueryResponse),
      );
    });
  }

  async function run(request: QueryRequest): Promise<QueryResult> {
    const deadline = request.deadline ?? Date.now() + options.jobTimeoutMs;
    for (let attemptNumber = 1; ; attemptNumber++) {
      const timeout = AbortSignal.timeout(Math.max(0, deadline - Date.now()));
      const attempt: Attempt = {
        signal: request.signal ? AbortSignal.any([timeout, request.signal]) : timeout,
      };
      let page: FirstPage;
      try {
        page = await untilAborted(runQuery(request, deadline, attempt), attempt.signal);
      } catch (error) {
        const failure = classify(error);
        const delay = backoff(retry, attemptNumber);
        if (
          !request.signal?.aborted &&
          failure.kind === "transient" &&
          attemptNumber < retry.attempts &&
          Date.now() + delay < deadline
        ) {
          await sleep(delay);
          continue;
        }
        throw engineError(failure, attempt.jobId, attemptNumber, options.jobTimeoutMs);
      }
      // Decoding is ours: a failure here is a bug (500), not BigQuery's.
      const { fields, rows, ...result } = page;
      return { rows: decodeRows(fields, rows), ...result };
    }
  }

  return {
    dialect: "bigquery",
    run,
    async ping() {
      await run({ endpoint: "ping", sql: "SELECT 1", params: {}, maxRows: 1 });
    },
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

/** A complete answer's first page; later pages are never fetched. */
function pageOf(answer: ResultsPage): FirstPage {
  return {
    fields: answer.schema?.fields ?? [],
    rows: answer.rows ?? [],
    truncated: Boolean(answer.pageToken),
    ...(answer.totalBytesProcessed && { bytesProcessed: Number(answer.totalBytesProcessed) }),
  };
}

/** Waits for a job BigQuery created, then reads its first page. */
async function firstPage(job: Job, maxRows: number, signal: AbortSignal): Promise<FirstPage> {
  for (;;) {
    // autoPaginate:false returns an unfinished job's answer instead of polling in the client, so
    // polling stops at our deadline. BigQuery holds each call up to 10 s while the job runs.
    const [rows, , response] = await job.getQueryResults({
      maxResults: maxRows,
      autoPaginate: false,
      skipParsing: true,
      "formatOptions.useInt64Timestamp": true,
    });
    if (response?.jobComplete !== false) return pageOf({ ...response, rows } as ResultsPage);
    signal.throwIfAborted();
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

interface Failure {
  kind: "timeout" | "transient" | "rejected";
  /** BigQuery's reason (`invalidQuery`, ...), HTTP status or network error code. */
  reason: string;
  /** The engine's own text: for the log only. */
  cause: string;
}

const TRANSIENT_REASONS = new Set([
  "rateLimitExceeded",
  "userRateLimitExceeded",
  "backendError",
  "internalError",
]);
const TRANSIENT_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
const NETWORK_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN"]);

const REJECTION_MESSAGES: Record<string, string> = {
  client: "The service could not reach BigQuery with its configuration; see the service log.",
  invalidQuery: "BigQuery rejected the endpoint's query as invalid.",
  notFound: "A table or dataset this endpoint reads does not exist in BigQuery.",
  accessDenied: "The service's BigQuery credentials may not run this endpoint's query.",
  bytesBilledLimitExceeded: "The query would scan more bytes than the service allows.",
};

function classify(error: unknown): Failure {
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return { kind: "timeout", reason: "deadline", cause: error.message };
  }
  if (error instanceof common.ApiError) {
    const reason = error.errors?.find((e) => e.reason)?.reason ?? String(error.code ?? "unknown");
    // BigQuery's own verdict when the job outlived the jobTimeoutMs it was sent with.
    if (reason === "timeout") return { kind: "timeout", reason, cause: error.message };
    const transient = TRANSIENT_REASONS.has(reason) || TRANSIENT_STATUSES.has(error.code ?? 0);
    return { kind: transient ? "transient" : "rejected", reason, cause: error.message };
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && NETWORK_CODES.has(code)) {
    return { kind: "transient", reason: code, cause: (error as Error).message };
  }
  // The client failed before BigQuery answered: credentials, configuration, a malformed reply.
  return { kind: "rejected", reason: "client", cause: (error as Error)?.message ?? String(error) };
}

function engineError(
  failure: Failure,
  jobId: string | undefined,
  attempts: number,
  jobTimeoutMs: number,
): EngineError {
  const detail = { ...(jobId && { jobId }), cause: `${failure.reason}: ${failure.cause}` };
  switch (failure.kind) {
    case "timeout":
      return new EngineError(
        "engine_timeout",
        `BigQuery did not finish the query within the ${jobTimeoutMs} ms job timeout.`,
        detail,
      );
    case "transient":
      return new EngineError(
        "engine_error",
        "BigQuery is rate-limited or temporarily unavailable; try again shortly.",
        { ...detail, cause: `${detail.cause} (after ${attempts} attempts)` },
      );
    case "rejected":
      return new EngineError(
        "engine_error",
        REJECTION_MESSAGES[failure.reason] ?? "BigQuery could not run the endpoint's query.",
        detail,
      );
  }
}
