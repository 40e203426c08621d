// A page cursor: the position of a record in a paged endpoint's order (timestamp, then id), opaque
// to callers. It is base64url of a tag, the timestamp in microseconds, the start of the window being
// paged when the page had one, and the id. A follow stream's event id (and a settled run's
// checkpoint) is a place in the stream's delivery order instead: its horizon, and a digest of each
// record after it already delivered. The tag is an HMAC under the service's secret (CURSOR_SECRET),
// so that only the service makes cursors: one cut, edited or made up is refused, whoever knows the
// format. The position itself is no secret: a cursor only narrows an answer that every other filter
// and the caller's scope still bound.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
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

/** A record's place in time order: after every record at `micros` when `id` is absent. */
export interface Point {
  micros: bigint;
  id?: string;
}

/**
 * A place in a follow stream's delivery order, which is not time order: a record may arrive late,
 * within the lag, after newer ones. Resuming there sends each record after `horizon` whose key is
 * not in `delivered`: none twice, and none that arrives within the lag lost.
 */
export interface StreamPosition {
  /** Every record at or before it was delivered, or is too old to arrive any more. */
  horizon: Point;
  /** The time of the newest record delivered: its followers keep `delivered` until the horizon passes it. */
  newest: bigint;
  /** `recordKey` of each record after the horizon that was delivered. */
  delivered: string[];
}

/** The stream position of an instant: after every record up to it, none delivered yet. */
export const startingAt = (micros: bigint): StreamPosition => ({
  horizon: { micros },
  newest: micros,
  delivered: [],
});

/** Most records a stream position names as delivered; past it, its horizon moves up (docs/scripts.md). */
export const MOST_DELIVERED = 64;

/** A record's key in a stream position: 64 bits of a hash of its time and id (11 characters). */
export function recordKey(point: Required<Point>): string {
  return createHash("sha256")
    .update(`${point.micros}:${point.id}`)
    .digest()
    .subarray(0, 8)
    .toString("base64url");
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
  encodeStream(position: StreamPosition): string;
  /**
   * The stream position an event id or checkpoint names; a record's cursor (the event ids made
   * before stream positions) is the position after that record. Undefined for anything else.
   */
  decodeStream(cursor: string): StreamPosition | undefined;
}

// 128 bits: past guessing, and a cursor stays short enough for a URL.
const TAG_BYTES = 16;
// `<micros>[><window start micros>]:<id>`, or `.` in place of `:<id>` for an instant's end.
const BODY = /^(-?\d{1,18})(?:>(-?\d{1,18}))?(?::([\s\S]*)|\.)$/;
// `~<horizon micros>~<newest micros>~<record keys>` then the horizon's `:<id>` or `.`.
const STREAM_BODY = new RegExp(
  `^~(-?\\d{1,18})~(-?\\d{1,18})~((?:[\\w-]{11}){0,${MOST_DELIVERED}})(?::([\\s\\S]*)|\\.)$`,
);

export function cursorCodec(secret: string | Buffer): CursorCodec {
  const tag = (body: Buffer) =>
    createHmac("sha256", secret).update(body).digest().subarray(0, TAG_BYTES);
  const sign = (text: string) => {
    const body = Buffer.from(text);
    return Buffer.concat([tag(body), body]).toString("base64url");
  };
  /** The body of a cursor this service signed, as text; undefined for anything else. */
  const signed = (cursor: string) => {
    if (!/^[\w-]+$/.test(cursor)) return undefined;
    const bytes = Buffer.from(cursor, "base64url");
    if (bytes.length <= TAG_BYTES) return undefined;
    const body = bytes.subarray(TAG_BYTES);
    if (!timingSafeEqual(bytes.subarray(0, TAG_BYTES), tag(body))) return undefined;
    return body.toString();
  };
  const encode = (position: RecordPosition) => {
    const start = position.windowStart && `>${parseIsoTimestamp(position.windowStart)}`;
    const after = position.id === undefined ? "." : `:${position.id}`;
    return sign(`${parseIsoTimestamp(position.timestamp)}${start || ""}${after}`);
  };
  const decode = (cursor: string): RecordPosition | undefined => {
    const body = signed(cursor);
    if (body === undefined) return undefined;
    const [matched, digits, startDigits, id] = BODY.exec(body) ?? [];
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
  };
  return {
    encode,
    decode,
    encodeStream: ({ horizon, newest, delivered }) =>
      sign(
        `~${horizon.micros}~${newest}~${delivered.join("")}${horizon.id === undefined ? "." : `:${horizon.id}`}`,
      ),
    decodeStream(cursor) {
      const body = signed(cursor);
      const [matched, horizonDigits, newestDigits, keys, id] = STREAM_BODY.exec(body ?? "") ?? [];
      if (matched === undefined) {
        const record = decode(cursor);
        if (!record) return undefined;
        const micros = parseIsoTimestamp(record.timestamp) as bigint;
        const horizon = { micros, ...(record.id !== undefined && { id: record.id }) };
        return { horizon, newest: micros, delivered: [] };
      }
      const [micros, newest] = [BigInt(horizonDigits as string), BigInt(newestDigits as string)];
      if (!inTimestampRange(micros) || !inTimestampRange(newest)) return undefined;
      return {
        horizon: { micros, ...(id !== undefined && { id }) },
        newest,
        delivered: (keys as string).match(/.{11}/g) ?? [],
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
