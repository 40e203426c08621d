// How a format other than JSON is made from the JSON payload the runner and the cache hold.
import type { Payload, Rendition } from "../../cache/payload.ts";
import { resultRows } from "../../cache/serialized-result.ts";
import type { Row } from "../../engines/engine.ts";
import type { Format } from "./format.ts";

/**
 * A format whose body is made from the result's rows and the endpoint's declared columns (a CSV
 * header needs them when there is no row); the other headers (X-Result-Truncated) carry over.
 */
export function rowsFormat(
  suffix: string,
  contentType: string,
  body: (rows: Row[], columns: readonly string[]) => string,
): Format {
  // One rendition per column list: the catalog's lists are few and live as long as the process.
  const renditions = new Map<readonly string[], Rendition>();
  const renditionFor = (columns: readonly string[]) => {
    let rendition = renditions.get(columns);
    if (!rendition) {
      const render = (payload: Payload): Payload => ({
        body: body(resultRows(payload), columns),
        // Content-Type is among the headers a strong ETag hashes, so equal bodies of two formats
        // (an empty result) still get distinct ETags.
        headers: { ...payload.headers, "content-type": contentType },
      });
      rendition = { name: suffix, render };
      renditions.set(columns, rendition);
    }
    return rendition;
  };
  return { contentType, suffix, renditionFor };
}
