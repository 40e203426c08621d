// A page cursor: the position of a record in a paged endpoint's order (timestamp, then id), opaque
// to callers. It is base64url of a tag, the timestamp in microseconds, the start of the window being
// paged when the page had one, where the walk's next page waits in a kept result when the engine
// keeps one (BigQuery), and the id. A follow stream's event id (and a settled run's checkpoint) is
// signed the same way around a place in the stream's delivery order instead (stream-position.ts).
// The tag is an HMAC under the service's secret (CURSOR_SECRET), so that only the service makes
// cursors: one cut, edited or made up is refused, whoever knows the format. The position itself is
// no secret: a cursor only narrows an answer that every other filter and the caller's scope still
// bound.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { ResultPlace, Row } from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { formatTimestamp, inTimestampRange, parseIsoTimestamp } from "../time.ts";
import {
  isStreamBody,
  parseStreamBody,
  type StreamPosition,
  streamBody,
} from "./stream-position.ts";

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
  /** Where the walk's next page waits, read instead of querying again when the walk is the same. */
  kept?: KeptPage;
}

/**
 * A page walk's next page in a query's kept result, and the walk it belongs to: `walk` digests the
 * deployment (where the data lives) and the walk's parameters, so that a cursor handed to another
 * deployment or carried over to other parameters never reads rows it did not ask for.
 */
export interface KeptPage {
  walk: string;
  place: ResultPlace;
}

/** Cursors under one secret: made once per service, shared by everything that makes or reads them. */
export interface CursorCodec {
  encode(position: RecordPosition): string;
  /** The position a cursor names; undefined for anything not made under this secret. */
  decode(cursor: string): RecordPosition | undefined;
  /**
   * The cursor of the page after `row`, the last of a full page (or the event id of `row`), in a
   * window that starts after `windowStart` when given, whose next page waits at `kept` when given.
   */
  after(row: Row, windowStart?: string | null, kept?: KeptPage): string;
  /** The digest of a page walk with these parameters on this service's deployment (KeptPage.walk). */
  walkOf(params: SqlParams): string;
  encodeStream(position: StreamPosition): string;
  /**
   * The stream position an event id or checkpoint names; a record's cursor (the event ids made
   * before stream positions) is the position after that record. Undefined for anything else.
   */
  decodeStream(cursor: string): StreamPosition | undefined;
}

// 128 bits: past guessing, and a cursor stays short enough for a URL.
const TAG_BYTES = 16;
// `<micros>[><window start micros>][^<kept page>]:<id>`, or `.` in place of `:<id>` for an
// instant's end.
const BODY = /^(-?\d{1,18})(?:>(-?\d{1,18}))?(?:\^([\w^-]{1,2600}))?(?::([\s\S]*)|\.)$/;
// A kept page: `<walk>^<job id>^<location>^<page token, base64url>`. BigQuery's job ids and locations
// are letters, digits, `_` and `-`, a job id at most 1 024 of them; its page tokens are opaque. A
// page whose place is longer than these bounds is linked by its keyset position alone.
const KEPT = /^([\w-]{16})\^([\w-]{1,1024})\^([\w-]{0,64})\^([\w-]{1,1366})$/;
const MOST_TOKEN_BYTES = 1024;
const WALK_BYTES = 12;
/** Where the paged schema hands a cursor's kept page to the runner; never bound in the SQL. */
export const KEPT_PAGE_PARAM = "cursor_kept_page";

// Parameters of the position itself, not of the walk: every page of one walk has its own.
const POSITION_PARAMS = new Set(["cursor_timestamp", "cursor_id", KEPT_PAGE_PARAM]);

/** A kept page as text (KEPT), or undefined when its place is past the bounds a cursor keeps. */
export function keptPageText({ walk, place }: KeptPage): string | undefined {
  const token = Buffer.from(place.pageToken).toString("base64url");
  const text = `${walk}^${place.jobId}^${place.location ?? ""}^${token}`;
  if (Buffer.byteLength(place.pageToken) > MOST_TOKEN_BYTES || !KEPT.test(text)) return undefined;
  return text;
}

/** The kept page `keptPageText` wrote; undefined for anything else. */
export function keptPageOf(text: string): KeptPage | undefined {
  const [matched, walk, jobId, location, token] = KEPT.exec(text) ?? [];
  if (matched === undefined) return undefined;
  const place = {
    jobId: jobId as string,
    ...(location && { location }),
    pageToken: Buffer.from(token as string, "base64url").toString(),
  };
  return { walk: walk as string, place };
}

/**
 * Cursors signed with `secret`; `deployment` names where the data lives (BigQuery: project and
 * dataset), so that a kept page is read only by a service of the same deployment.
 */
export function cursorCodec(secret: string | Buffer, deployment = ""): CursorCodec {
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
    const kept = position.kept && keptPageText(position.kept);
    const after = position.id === undefined ? "." : `:${position.id}`;
    return sign(
      `${parseIsoTimestamp(position.timestamp)}${start || ""}${kept ? `^${kept}` : ""}${after}`,
    );
  };
  const decode = (cursor: string): RecordPosition | undefined => {
    const body = signed(cursor);
    if (body === undefined) return undefined;
    const [matched, digits, startDigits, keptText, id] = BODY.exec(body.toString()) ?? [];
    if (matched === undefined || digits === undefined) return undefined;
    const kept = keptText === undefined ? undefined : keptPageOf(keptText);
    if (keptText !== undefined && !kept) return undefined;
    const micros = BigInt(digits);
    const start = startDigits === undefined ? undefined : BigInt(startDigits);
    if (!inTimestampRange(micros) || (start !== undefined && !inTimestampRange(start))) {
      return undefined;
    }
    return {
      timestamp: formatTimestamp(micros),
      ...(id !== undefined && { id }),
      ...(start !== undefined && { windowStart: formatTimestamp(start) }),
      ...(kept && { kept }),
    };
  };
  return {
    encode,
    decode,
    encodeStream: (position) => sign(streamBody(position)),
    decodeStream(cursor) {
      const body = signed(cursor);
      if (body === undefined) return undefined;
      if (isStreamBody(body)) return parseStreamBody(body);
      const record = decode(cursor);
      if (!record) return undefined;
      const micros = parseIsoTimestamp(record.timestamp) as bigint;
      const horizon = { micros, ...(record.id !== undefined && { id: record.id }) };
      return { horizon, newest: micros, delivered: [] };
    },
    after: (row, windowStart, kept) =>
      encode({
        timestamp: String(row.timestamp),
        id: typeof row.id === "string" ? row.id : "",
        ...(windowStart && { windowStart }),
        ...(kept && { kept }),
      }),
    walkOf(params) {
      const bound = Object.entries(params)
        .filter(([name]) => !POSITION_PARAMS.has(name))
        .sort(([a], [b]) => (a < b ? -1 : 1));
      return createHash("sha256")
        .update(JSON.stringify([deployment, bound]))
        .digest()
        .subarray(0, WALK_BYTES)
        .toString("base64url");
    },
  };
}
