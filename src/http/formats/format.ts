// What a representation of an endpoint's result is, and how one is made from the JSON the runner
// and the cache hold.
import type { Payload, Rendition } from "../../cache/result-cache.ts";
import type { Row } from "../../engines/engine.ts";
import { resultRows } from "./json.ts";

export interface Format {
  /** As sent; its media type (before the `;`) is what Accept is matched against. */
  contentType: string;
  /** `<name>.<suffix>` on the name path asks for this format whatever Accept says. */
  suffix: string;
  /** How it is made from the JSON payload; absent for JSON, which is that payload. */
  rendition?: Rendition;
}

/** A format whose body is made from the result's rows; the other headers (X-Result-Truncated) carry over. */
export function rowsFormat(
  suffix: string,
  contentType: string,
  body: (rows: Row[]) => string,
): Format {
  const render = (payload: Payload): Payload => ({
    body: body(resultRows(payload)),
    // Content-Type is among the headers a strong ETag hashes, so equal bodies of two formats
    // (an empty result) still get distinct ETags.
    headers: { ...payload.headers, "content-type": contentType },
  });
  return { contentType, suffix, rendition: { name: suffix, render } };
}
