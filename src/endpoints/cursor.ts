// A page cursor: the position of a record in a paged endpoint's order (timestamp, then id), opaque to
// callers. It is base64url of a check tag, the timestamp in microseconds and the id. The tag catches
// a cursor that was cut or edited; it is not a secret, since a cursor only narrows an answer that
// every other filter and the caller's scope still bound.
import { createHash } from "node:crypto";
import type { Row } from "../engines/engine.ts";
import { formatTimestamp, inTimestampRange, parseIsoTimestamp } from "../time.ts";

export interface RecordPosition {
  /** RFC 3339 UTC with microseconds, as the wire format writes it. */
  timestamp: string;
  /** A missing id orders as the empty string, as in the SQL. */
  id: string;
}

const TAG_BYTES = 6;
const BODY = /^(-?\d{1,18}):([\s\S]*)$/;

function tag(body: string): Buffer {
  return createHash("sha256").update(body).digest().subarray(0, TAG_BYTES);
}

export function encodeCursor(position: RecordPosition): string {
  const body = `${parseIsoTimestamp(position.timestamp)}:${position.id}`;
  return Buffer.concat([tag(body), Buffer.from(body)]).toString("base64url");
}

/** The cursor of the page after `row`, the last of a full page. */
export function cursorAfter(row: Row): string {
  return encodeCursor({
    timestamp: String(row.timestamp),
    id: typeof row.id === "string" ? row.id : "",
  });
}

/** The position a cursor names; undefined for anything this service did not make. */
export function decodeCursor(cursor: string): RecordPosition | undefined {
  if (!/^[\w-]+$/.test(cursor)) return undefined;
  const bytes = Buffer.from(cursor, "base64url");
  if (bytes.length <= TAG_BYTES) return undefined;
  const body = bytes.subarray(TAG_BYTES).toString();
  if (!bytes.subarray(0, TAG_BYTES).equals(tag(body))) return undefined;
  const [, digits, id] = BODY.exec(body) ?? [];
  if (digits === undefined || id === undefined) return undefined;
  const micros = BigInt(digits);
  return inTimestampRange(micros) ? { timestamp: formatTimestamp(micros), id } : undefined;
}
