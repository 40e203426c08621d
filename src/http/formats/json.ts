// The default representation, `{"result":[...]}`: what the runner makes and the cache stores, and
// what every other format is rendered from.
import type { Payload } from "../../cache/payload.ts";
import { FORMAT_SUFFIXES } from "../../endpoints/format-suffixes.ts";
import type { QueryResult, Row } from "../../engines/engine.ts";
import type { Format } from "./format.ts";

export const json: Format = {
  contentType: "application/json; charset=utf-8",
  suffix: FORMAT_SUFFIXES.json,
};

/** The wire form of a result, a header when rows were cut at the cap, and what BigQuery scanned. */
export function serializeResult(result: QueryResult): Payload {
  const headers: Record<string, string> = { "content-type": json.contentType };
  if (result.truncated) headers["x-result-truncated"] = "true";
  if (result.bytesProcessed !== undefined) {
    headers["x-bytes-processed"] = String(result.bytesProcessed);
  }
  return { body: JSON.stringify({ result: result.rows }), headers };
}

// The headers serializeResult writes, and what each can hold.
const RESULT_HEADERS = new Map<string, (value: string) => boolean>([
  ["content-type", (value) => value === json.contentType],
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
