// A follow stream's place in what it sent, which is not time order: its event ids and a settled
// run's checkpoint name one. It is the horizon (every record at or before it sent, or too old to
// arrive any more), the newest record's time, and a digest and the time of each record after the
// horizon already sent; cursor.ts signs its body as it signs a page cursor.
import { createHash } from "node:crypto";
import { inTimestampRange } from "../time.ts";

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

// `^<horizon micros>^<newest micros>^`, a byte counting the records, each record's 8-byte key and
// its time as an unsigned LEB128 of µs after the one before (the first: after the horizon), then
// the horizon's `:<id>` or `.`. Binary, as the keys and times are most of the bytes: about 1 KB.
// A page cursor's body starts with a digit or `-`, never the `^` that tags this one.
const STREAM_HEAD = /^\^(-?\d{1,18})\^(-?\d{1,18})\^/;
const KEY_BYTES = 8;

const STREAM_TAG = "^".charCodeAt(0);

/** Whether a signed body is a stream position's (a page cursor's starts with a digit or `-`). */
export const isStreamBody = (body: Buffer) => body[0] === STREAM_TAG;

/**
 * A stream position's body (STREAM_HEAD). A record it names at an earlier time than the horizon's
 * is past it, names nothing, and is left out.
 */
export function streamBody({ horizon, newest, delivered }: StreamPosition): Buffer {
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

/** The stream position `streamBody` wrote; undefined for anything else. */
export function parseStreamBody(body: Buffer): StreamPosition | undefined {
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
