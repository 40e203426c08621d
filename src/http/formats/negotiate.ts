// Which format a request gets: the suffix on the name path, else the Accept header (RFC 9110 §12.5.1).
import Negotiator from "negotiator";
import { csv } from "./csv.ts";
import type { Format } from "./format.ts";
import { json } from "./json.ts";
import { ndjson } from "./ndjson.ts";

// JSON first: what */* and a request without Accept get.
const FORMATS: readonly Format[] = [json, ndjson, csv];
const CONTENT_TYPES = FORMATS.map((format) => format.contentType);

/** The media types served, for a 406 to list. */
export const MEDIA_TYPES: readonly string[] = FORMATS.map((format) => mediaTypeOf(format));

// The Accept values most clients send, answered without parsing.
const PLAIN_ACCEPT = new Map<string, Format>([
  ["*/*", json],
  ...FORMATS.map((format): [string, Format] => [mediaTypeOf(format), format]),
]);

/** `logs.all.csv` → `logs.all` and CSV; undefined when the path has no format suffix. */
export function splitFormatSuffix(path: string): { name: string; format: Format } | undefined {
  for (const format of FORMATS) {
    const suffix = `.${format.suffix}`;
    if (path.endsWith(suffix)) return { name: path.slice(0, -suffix.length), format };
  }
  return undefined;
}

/** The format Accept prefers (q-values, then specificity, then JSON first); undefined when it takes none. */
export function acceptedFormat(accept: string | undefined): Format | undefined {
  // An empty Accept is taken as none: clients that send one mean no preference.
  if (accept === undefined || accept.trim() === "") return json;
  const plain = PLAIN_ACCEPT.get(accept);
  if (plain) return plain;
  const chosen = new Negotiator({ headers: { accept } }).mediaType(CONTENT_TYPES);
  return FORMATS.find((format) => format.contentType === chosen);
}

function mediaTypeOf(format: Format): string {
  return format.contentType.split(";")[0] as string;
}
