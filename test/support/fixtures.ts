// Concise builders for source-table rows (edge_logs, function_edge_logs) and the microsecond
// time arithmetic the SQL conformance tests use to place records on exact boundaries.
import { formatTimestamp, parseIsoTimestamp } from "../../src/time.ts";
import type { Row } from "./googlesql.ts";

// ---------------------------------------------------------------------------------------------
// Time, in epoch microseconds

export const MICROSECOND = 1n;
export const SECOND = 1_000_000n;
export const MINUTE = 60n * SECOND;
export const HOUR = 60n * MINUTE;
export const DAY = 24n * HOUR;

/** Epoch microseconds of an ISO 8601 timestamp with zone; throws on anything else. */
export function micros(iso: string): bigint {
  const value = parseIsoTimestamp(iso);
  if (value === undefined) throw new Error(`not an ISO 8601 timestamp with zone: ${iso}`);
  return value;
}

/** `iso` moved by `delta` microseconds, in the harness's TIMESTAMP output form. */
export function shift(iso: string, delta: bigint): string {
  return formatTimestamp(micros(iso) + delta);
}

/** `iso` truncated to a multiple of `unit` (UTC; every unit used here divides a day). */
export function truncate(iso: string, unit: bigint): string {
  const value = micros(iso);
  return formatTimestamp(value - (((value % unit) + unit) % unit));
}

/** The DATETIME form of a UTC instant: `2026-11-21T05:00:00` (fraction only when non-zero). */
export function utcDatetime(iso: string): string {
  return formatTimestamp(micros(iso))
    .replace(/\.000000Z$/, "")
    .replace(/Z$/, "");
}

// ---------------------------------------------------------------------------------------------
// Rows

let lastId = 0;

/** A fresh record id, unique within the test run. */
export function nextId(): string {
  lastId += 1;
  return `rec-${lastId}`;
}

export const PROJECT = "abcdefghijklmnop";
export const OTHER_PROJECT = "zyxwvutsrqponmlk";

export interface InvocationFields {
  project?: string | null;
  functionId?: string | null;
  ms?: number | null;
  /** One response element per status code; `[]` is an invocation with no response element. */
  statuses?: number[];
}

/** One `function_edge_logs` metadata element (one invocation). */
export function invocation(fields: InvocationFields = {}): Row {
  const project = fields.project === undefined ? PROJECT : fields.project;
  return {
    project_ref: project,
    function_id: fields.functionId === undefined ? "fn-hello" : fields.functionId,
    execution_time_ms: fields.ms === undefined ? 10 : fields.ms,
    request: [{ method: "POST", url: `https://${project}.supabase.co/functions/v1/hello` }],
    response: (fields.statuses ?? [200]).map((status_code) => ({ status_code })),
  };
}

/** A `function_edge_logs` record at `timestamp` holding the given invocations (metadata elements). */
export function functionLog(timestamp: string, ...metadata: Row[]): Row {
  return { id: nextId(), timestamp, event_message: "POST | 200 | hello", metadata };
}

/** A record with one invocation: the normal case. */
export function functionCall(timestamp: string, fields: InvocationFields = {}): Row {
  return functionLog(timestamp, invocation(fields));
}

/** One `edge_logs` request element; the URL carries the project ref as its first host label. */
export function request(path: string, ref: string = PROJECT): Row {
  const host = `${ref}.supabase.co`;
  return { method: "GET", path, url: `https://${host}${path}`, host };
}

export interface EdgeLogFields {
  project?: string;
  id?: string;
  message?: string;
  /** Metadata elements; default: one element with one `/rest` request. */
  metadata?: Row[];
}

/** One `edge_logs` metadata element with the given requests and a 200 response. */
export function edgeMetadata(...requests: Row[]): Row {
  return { request: requests, response: [{ status_code: 200 }] };
}

/** An `edge_logs` record at `timestamp`. */
export function edgeLog(timestamp: string, fields: EdgeLogFields = {}): Row {
  return {
    id: fields.id ?? nextId(),
    timestamp,
    event_message: fields.message ?? `GET | 200 | ${timestamp}`,
    project: fields.project ?? PROJECT,
    metadata: fields.metadata ?? [edgeMetadata(request("/rest/v1/todos"))],
  };
}

/** An `edge_logs` record with one metadata element holding these requests. */
export function edgeRequests(timestamp: string, ...requests: Row[]): Row {
  return edgeLog(timestamp, { metadata: [edgeMetadata(...requests)] });
}
