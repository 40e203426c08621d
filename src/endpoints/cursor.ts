// A page cursor (and a follow stream's event id): the position of a record in a paged endpoint's
// order (timestamp, then id), opaque to callers. It is base64url of a tag, the timestamp in
// microseconds, the start of the window being paged when the page had one, and the id. The tag is an HMAC under the service's secret (CURSOR_SECRET), so that
// only the service makes cursors: one cut, edited or made up is refused, whoever knows the format.
// The position itself is no secret: a cursor only narrows an answer that every other filter and the
// caller's scope still bound.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Row } from "../engines/engine.ts";
import { formatTimestamp, inTimestampRange, parseIsoTimestamp } from "../time.ts";

export interface RecordPosition {
  /** RFC 3339 UTC with microseconds, as the wire format writes it. */
  timestamp: string;
  /**
   * A missing id orders as the empty string, as in the SQL. Absent: the position after every record
   * at `timestamp` (where a stream settled with nothing to send, or where its start was an instant).
   */
  id?: string;
  /**
   * The window's start (RFC 3339) of the page the cursor follows: where a relative start (`since`)
   * was resolved, so that every page of one run keeps the first page's window.
   */
  windowStart?: string;
}

/** Cursors under one secret: made once per service, shared by everything that makes or reads them. */
export interface CursorCodec {
  encode(position: RecordPosition): string;
  /** The position a cursor names; undefined for anything not made under this secret. */
  decode(cursor: string): RecordPosition | undefined;
  /**
   * The cursor of the page after `row`, the last of a full page (or the event id of `row`), in a
   * window that starts after `windowStart` when given.
   */
  after(row: Row, windowStart?: string | null): string;
}

// 128 bits: past guessing, and a cursor stays short enough for a URL.
const TAG_BYTES = 16;
// `<micros>[><window start micros>]:<id>`, or `.` in place of `:<id>` for an instant's end.
const BODY = /^(-?\d{1,18})(?:>(-?\d{1,18}))?(?::([\s\S]*)|\.)$/;

export function cursorCodec(secret: string | Buffer): CursorCodec {
  const tag = (body: Buffer) =>
    createHmac("sha256", secret).update(body).digest().subarray(0, TAG_BYTES);
  const encode = (position: RecordPosition) => {
    const start = position.windowStart && `>${parseIsoTimestamp(position.windowStart)}`;
    const after = position.id === undefined ? "." : `:${position.id}`;
    const body = Buffer.from(`${parseIsoTimestamp(position.timestamp)}${start || ""}${after}`);
    return Buffer.concat([tag(body), body]).toString("base64url");
  };
  return {
    encode,
    decode(cursor) {
      if (!/^[\w-]+$/.test(cursor)) return undefined;
      const bytes = Buffer.from(cursor, "base64url");
      if (bytes.length <= TAG_BYTES) return undefined;
      const body = bytes.subarray(TAG_BYTES);
      if (!timingSafeEqual(bytes.subarray(0, TAG_BYTES), tag(body))) return undefined;
      const [matched, digits, startDigits, id] = BODY.exec(body.toString()) ?? [];
      if (matched === undefined || digits === undefined) return undefined;
      const micros = BigInt(digits);
      const start = startDigits === undefined ? undefined : BigInt(startDigits);
      if (!inTimestampRange(micros) || (start !== undefined && !inTimestampRange(start))) {
        return undefined;
      }
      return {
        timestamp: formatTimestamp(micros),
        ...(id !== undefined && { id }),
        ...(start !== undefined && { windowStart: formatTimestamp(start) }),
      };
    },
    after: (row, windowStart) =>
      encode({
        timestamp: String(row.timestamp),
        id: typeof row.id === "string" ? row.id : "",
        ...(windowStart && { windowStart }),
      }),
  };
}
