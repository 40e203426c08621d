// Which format a request gets: the suffix on the name path, else the Accept header (RFC 9110 §12.5.1).
import Negotiator from "negotiator";
import { csv } from "./csv.ts";
import type { Format, MediaFormat } from "./format.ts";
import { json } from "./json.ts";
import { ndjson } from "./ndjson.ts";

// JSON first: what */* and a request without Accept get.
/** The formats of an endpoint's answer. */
export const ANSWER_FORMATS: readonly [Format, ...Format[]] = [json, ndjson, csv];

/** `logs.all.csv` → `logs.all` and CSV; undefined when the path has no format suffix. */
export function splitFormatSuffix(path: string): { name: string; format: Format } | undefined {
  for (const format of ANSWER_FORMATS) {
    const suffix = `.${format.suffix}`;
    if (path.endsWith(suffix)) return { name: path.slice(0, -suffix.length), format };
  }
  return undefined;
}

/** What a route answers in, and how it reads Accept. */
export interface Negotiation<F extends MediaFormat> {
  readonly formats: readonly F[];
  /** Their media types, for a 406 to list. */
  readonly available: readonly string[];
  /**
   * The format Accept prefers (q-values, then specificity, then the first of `formats`); undefined
   * when it takes none. An absent or empty Accept (clients that send one mean no preference) takes
   * the first.
   */
  accepted(accept: string | undefined): F | undefined;
}

export function negotiation<F extends MediaFormat>(formats: readonly [F, ...F[]]): Negotiation<F> {
  const contentTypes = formats.map((format) => format.contentType);
  // The Accept values most clients send, answered without parsing.
  const plain = new Map<string, F>([
    ["*/*", formats[0]],
    ...formats.map((format): [string, F] => [mediaTypeOf(format), format]),
  ]);
  return {
    formats,
    available: formats.map(mediaTypeOf),
    accepted(accept) {
      if (accept === undefined || accept.trim() === "") return formats[0];
      const found = plain.get(accept);
      if (found) return found;
      const chosen = new Negotiator({ headers: { accept } }).mediaType(contentTypes);
      return formats.find((format) => format.contentType === chosen);
    },
  };
}

function mediaTypeOf(format: MediaFormat): string {
  return format.contentType.split(";")[0] as string;
}
