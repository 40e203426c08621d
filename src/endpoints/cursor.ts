// A page cursor: the position of a record in a paged endpoint's order (timestamp, then id), opaque
// to callers. It is base64url of a tag, the timestamp in microseconds, the start of the window being
// paged when the page had one, and the id. A follow stream's event id (and a settled run's
// checkpoint) is a place in the stream's delivery order instead: its horizon, and a digest and the
// time of each record after it already delivered. The tag is an HMAC under the service's secret
// (CURSOR_SECRET), so that only the service makes cursors: one cut, edited or made up is refused,
// whoever knows the format. The position itself is no secret: a cursor only narrows an answer that
// every other filter and the caller's scope still bound.
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
  /** Each record after the horizon that was delivered, oldest first. */
  delivered: DeliveredRecord[];
}

/** A delivered record as a stream position names it: its time, so that a resume cuts at it. */
export interface DeliveredRecord {
  /** `recordKey` of the record. */
  key: string;
  micros: bigint;
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
// `^<horizon micros>^<newest micros>^`, a byte counting the records, each record's 8-byte key and
// its time as an unsigned LEB128 of µs after the one before (the first: after the horizon), then
// the horizon's `:<id>` or `.`. Binary, as the keys and times are most of the bytes: about 1 KB.
const STREAM_HEAD = /^\^(-?\d{1,18})\^(-?\d{1,18})\^/;
const KEY_BYTES = 8;
// Made before stream positions named each record's time: `~<horizon>~<newest>~<record keys>`, then
// the horizon's `:<id>` or `.`. Its records are taken to be at `newest`, as they then were.
const KEYS_ONLY_BODY = new RegExp(
  `^~(-?\\d{1,18})~(-?\\d{1,18})~((?:[\\w-]{11}){0,${MOST_DELIVERED}})(?::([\\s\\S]*)|\\.)$`,
);

export function cursorCodec(secret: string | Buffer): CursorCodec {
  const tag = (body: Buffer) =>
    createHmac("sha256", secret).update(body).digest().subarray(0, TAG_BYTES);
  const sign = (content: string | Buffer) => {
    const body = Buffer.from(content);
    return Buffer.concat([tag(body), body]).toString("base64url");
  };
  /** The body of a cursor this service signed; undefined for anything else. */
  const signed = (cursor: string) => {
    if (!/^[\w-]+$/.test(cursor)) return undefined;
    const bytes = Buffer.from(cursor, "base64url");
    if (bytes.length <= TAG_BYTES) return undefined;
    const body = bytes.subarray(TAG_BYTES);
    if (!timingSafeEqual(bytes.subarray(0, TAG_BYTES), tag(body))) return undefined;
    return body;
  };
  const encode = (position: RecordPosition) => {
    const start = position.windowStart && `>${parseIsoTimestamp(position.windowStart)}`;
    const after = position.id === undefined ? "." : `:${position.id}`;
    return sign(`${parseIsoTimestamp(position.timestamp)}${start || ""}${after}`);
  };
  const decode = (cursor: string): RecordPosition | undefined => {
    const body = signed(cursor);
    if (body === undefined) return undefined;
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
  };
  return {
    encode,
    decode,
    encodeStream: (position) => sign(streamBody(position)),
    decodeStream(cursor) {
      const body = signed(cursor);
      if (body === undefined) return undefined;
      if (body[0] === STREAM_TAG) return parseStreamBody(body);
      const [matched, horizonDigits, newestDigits, keys, id] =
        KEYS_ONLY_BODY.exec(body.toString()) ?? [];
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
        delivered: ((keys as string).match(/.{11}/g) ?? []).map((key) => ({ key, micros: newest })),
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

const STREAM_TAG = "^".charCodeAt(0);

/**
 * A stream position's body (STREAM_HEAD). A record it names at an earlier time than the horizon's
 * is past it, names nothing, and is left out.
 */
function streamBody({ horizon, newest, delivered }: StreamPosition): Buffer {
  const parts: Buffer[] = [Buffer.from(`^${horizon.micros}^${newest}^`)];
  const records = delivered
    .filter(({ micros }) => micros >= horizon.micros)
    .sort((a, b) => (a.micros < b.micros ? -1 : a.micros > b.micros ? 1 : 0));
  parts.push(Buffer.of(records.length));
  let previous = horizon.micros;
  for (const { key, micros } of records) {
    parts.push(Buffer.from(key, "base64url"), leb128(micros - previous));
    previous = micros;
  }
  parts.push(Buffer.from(horizon.id === undefined ? "." : `:${horizon.id}`));
  return Buffer.concat(parts);
}

function parseStreamBody(body: Buffer): StreamPosition | undefined {
  const [head, horizonDigits, newestDigits] =
    STREAM_HEAD.exec(body.subarray(0, 42).toString("latin1")) ?? [];
  if (head === undefined) return undefined;
  const [horizon, newest] = [BigInt(horizonDigits as string), BigInt(newestDigits as string)];
  if (!inTimestampRange(horizon) || !inTimestampRange(newest)) return undefined;
  let at = head.length;
  const count = body[at++] ?? Number.POSITIVE_INFINITY;
  if (count > MOST_DELIVERED) return undefined;
  const delivered: DeliveredRecord[] = [];
  let micros = horizon;
  for (let i = 0; i < count; i++) {
    const key = body.subarray(at, at + KEY_BYTES);
    const gap = readLeb128(body, at + KEY_BYTES);
    if (key.length < KEY_BYTES || !gap) return undefined;
    micros += gap.value;
    if (!inTimestampRange(micros)) return undefined;
    delivered.push({ key: key.toString("base64url"), micros });
    at = gap.end;
  }
  const rest = body.subarray(at).toString();
  if (rest !== "." && !rest.startsWith(":")) return undefined;
  return {
    horizon: { micros: horizon, ...(rest !== "." && { id: rest.slice(1) }) },
    newest,
    delivered,
  };
}

/** A non-negative number in unsigned LEB128: 7 bits a byte, low first, the high bit set on all but the last. */
function leb128(value: bigint): Buffer {
  const bytes: number[] = [];
  let rest = value;
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    bytes.push(rest > 0n ? low | 0x80 : low);
  } while (rest > 0n);
  return Buffer.from(bytes);
}

/** The LEB128 number at `at` and the offset after it; undefined when cut short or over 63 bits. */
function readLeb128(bytes: Buffer, at: number): { value: bigint; end: number } | undefined {
  let value = 0n;
  for (let end = at, shift = 0n; shift < 63n; end++, shift += 7n) {
    const byte = bytes[end];
    if (byte === undefined) return undefined;
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return { value, end: end + 1 };
  }
  return undefined;
}
