// The form the runner makes a result into and the cache stores, `{"result":[...]}` with its headers:
// the JSON format as served (http/formats/json.ts), and what every other format and the alerts read.
import type { QueryResult, Row } from "../engines/engine.ts";
import type { Payload } from "./payload.ts";

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** The wire form of a result, a header when rows were cut at the cap, and what BigQuery scanned. */
export function serializeResult(result: QueryResult): Payload {
  const headers: Record<string, string> = { "content-type": JSON_CONTENT_TYPE };
  if (result.truncated) headers["x-result-truncated"] = "true";
  if (result.bytesProcessed !== undefined) {
    headers["x-bytes-processed"] = String(result.bytesProcessed);
  }
  return { body: JSON.stringify({ result: result.rows }), headers };
}

// The headers serializeResult writes, and what each can hold.
const RESULT_HEADERS = new Map<string, (value: string) => boolean>([
  ["content-type", (value) => value === JSON_CONTENT_TYPE],
  ["x-result-truncated", (value) => value === "true"],
  ["x-bytes-processed", (value) => /^\d{1,20}$/.test(value)],
]);

/**
 * Whether a payload is one serializeResult could have made: `{"result":[...]}` of objects, written
 * as JSON.stringify writes it, with only its headers. A value read back from Redis is served only then (anyone who can write there could
 * have written it), so no other header goes out and every format can be rendered from it.
 */
export function isSerializedResult(payload: Payload): boolean {
  const { headers } = payload;
  if (headers["content-type"] === undefined) return false;
  for (const [name, value] of Object.entries(headers)) {
    if (!RESULT_HEADERS.get(name)?.(value)) return false;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.body);
  } catch {
    return false;
  }
  // As JSON.stringify writes it: one line, so that it goes into a stream's `data:` line as it is.
  if (JSON.stringify(parsed) !== payload.body) return false;
  if (!isRecord(parsed) || Object.keys(parsed).length !== 1) return false;
  const { result } = parsed;
  return Array.isArray(result) && result.every(isRecord);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The rows back from a serialized result: JSON text parses to exactly the values it was made of. */
export function resultRows(payload: Payload): Row[] {
  return (JSON.parse(payload.body) as { result: Row[] }).result;
}
