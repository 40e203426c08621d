// The default representation, `{"result":[...]}`: what the runner makes and the cache stores, and
// what every other format is rendered from.
import type { Payload } from "../../cache/result-cache.ts";
import type { QueryResult, Row } from "../../engines/engine.ts";
import type { Format } from "./format.ts";

export const json: Format = { contentType: "application/json; charset=utf-8", suffix: "json" };

/** The wire form of a result, a header when rows were cut at the cap, and what BigQuery scanned. */
export function serializeResult(result: QueryResult): Payload {
  const headers: Record<string, string> = { "content-type": json.contentType };
  if (result.truncated) headers["x-result-truncated"] = "true";
  if (result.bytesProcessed !== undefined) {
    headers["x-bytes-processed"] = String(result.bytesProcessed);
  }
  return { body: JSON.stringify({ result: result.rows }), headers };
}

/** The rows back from a serialized result: JSON text parses to exactly the values it was made of. */
export function resultRows(payload: Payload): Row[] {
  return (JSON.parse(payload.body) as { result: Row[] }).result;
}
