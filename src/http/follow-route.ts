// GET …/<name>/follow: a followable endpoint's records as they arrive, as Server-Sent Events (the
// default) or NDJSON lines, until the caller leaves, its credential ends, it reads too slowly or
// the service closes.
import type { FastifyRequest } from "fastify";
import type { RawQuery } from "../credentials/scope-rule.ts";
import { notFollowed, type PagingContract } from "../endpoints/catalog.ts";
import type { CursorCodec } from "../endpoints/cursor.ts";
import { InvalidParamsError } from "../endpoints/params.ts";
import { retentionDays } from "../endpoints/retention.ts";
import { type StreamPosition, startingAt } from "../endpoints/stream-position.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { formatTimestamp, parseIsoTimestamp } from "../time.ts";
import { HttpError } from "./errors.ts";
import type { MediaFormat } from "./formats/format.ts";
import { presentTimes } from "./formats/time-format.ts";
import {
  EVENT_STREAM,
  type FollowedEndpoint,
  type KindHandler,
  type RouteKind,
} from "./route-kind.ts";
import { sendStream, sendStreamHead } from "./streams/stream-places.ts";

/** The follow stream's handler, for `kind`. */
export const followHandler =
  (kind: RouteKind<MediaFormat, FollowedEndpoint>): KindHandler =>
  ({ hub, requests, reserve, loadedThrough }) =>
  async (request, reply) => {
    let resume: StreamPosition | undefined;
    let settled = false;
    // The stream's own parameters are not the endpoint's: taken out before the scope sees them.
    const { endpoint, query, params, format, timeFormat } = requests.enter(kind, request, reply, {
      narrow: ({ after, until, ...raw }, { paging }) => {
        refuseNotFollowed(paging, raw);
        resume = resumption(request, after, hub.options.cursors);
        settled = settledMode(until);
        // A resume goes on where the stream was, whatever start the URL gives (EventSource
        // reconnects to the URL it opened, `since` and all); only a start the key's scope fixes
        // still bounds it.
        return resume ? withoutStart(paging, raw) : raw;
      },
    });
    const { paging } = endpoint;
    refusePinnedEnd(paging, query);
    const now = hub.now();
    const from = startingPoint(paging, params, resume);
    const settledUntil = settled ? settledEnd(now, hub.lag, loadedThrough) : undefined;
    if (settled && from?.resumed) refuseDroppedRecords(paging, from.horizon.micros, params, now);
    const place = await reserve(request);
    if (request.method === "HEAD") {
      return sendStreamHead(reply, place, format === EVENT_STREAM, format.contentType);
    }
    const stream = place.open(reply, format === EVENT_STREAM, endpoint);
    // Where it starts, as an event id: a client that reconnects before any record came resumes
    // there, with nothing skipped and no start of its own to compute (or to clash with a scope).
    // It comes with data, which clients built on eventsource-parser need to keep an id, in an event
    // not named `open`, which EventSource would hand its own onopen.
    const start = from ?? startingAt(now);
    stream.startsAt(hub.options.cursors.encodeStream(start));
    if (stream.events) {
      stream.event(
        "start",
        hub.options.cursors.encodeStream(start),
        JSON.stringify({
          from: formatTimestamp(start.horizon.micros),
          resumed: !!from?.resumed,
        }),
      );
    }
    const stop = hub.follow(
      endpoint,
      params,
      from,
      {
        credential: request.credential.name,
        deliver: (record, cursor) =>
          stream.record(
            timeFormat ? presentTimes(record, endpoint.timeColumns, timeFormat) : record,
            cursor,
          ),
        ready: () => stream.ready(),
        fail: (error) => {
          request.log.error({ err: error }, "follow stream could not catch up");
          stream.end("error");
        },
        settled: (cursor, cost) => stream.end("settled", { cursor, ...cost }),
      },
      settledUntil,
    );
    stream.body.once("close", stop);
    return sendStream(reply, stream, format.contentType);
  };

function refuseNotFollowed(paging: PagingContract, query: RawQuery): void {
  const given = notFollowed(paging).filter((param) => query[param] !== undefined);
  if (given.length === 0) return;
  throw new InvalidParamsError(
    given.map((param) => ({
      param,
      message: `not taken by a follow stream, which runs from ${paging.window.start} or now onwards`,
    })),
  );
}

/** The caller could not give an end (refused above): one there is the scope's, which a stream cannot keep. */
function refusePinnedEnd({ window }: PagingContract, authorized: RawQuery): void {
  if (authorized[window.end] === undefined) return;
  throw new HttpError(
    "forbidden",
    `This credential's scope fixes ${window.end}, and a follow stream runs on past any end: call the endpoint itself for that range.`,
  );
}

/**
 * Where a settled run ends: at records that can no longer be overtaken by a late one, a lag before
 * now; on data loaded from files, a lag before the instant every file that had arrived was loaded
 * (a file loaded late holds records a lag older than its arrival at most). Before startup's files
 * are loaded, nothing is settled: the run sends nothing and its checkpoint stays.
 */
function settledEnd(now: bigint, lag: bigint, loadedThrough?: () => bigint | undefined): bigint {
  const through = loadedThrough ? (loadedThrough() ?? 0n) : now;
  return (through < now ? through : now) - lag;
}

/** `until=settled` or nothing: anything else is refused, naming it. */
function settledMode(until: unknown): boolean {
  if (until === undefined || until === "") return false;
  if (until === "settled") return true;
  throw new InvalidParamsError([
    {
      param: "until",
      message:
        "must be settled: the stream then ends once every record that can no longer be overtaken by a late one was sent",
    },
  ]);
}

/** Where a stream starts, and whether from an event id or checkpoint (a resume) rather than an instant. */
type Start = StreamPosition & { resumed?: boolean };

/** The starting parameters a caller may give (since, the window's start), which a resume does without. */
const startsOf = ({ window }: PagingContract) => [window.since, window.start];

const withoutStart = (paging: PagingContract, query: RawQuery): RawQuery =>
  Object.fromEntries(Object.entries(query).filter(([param]) => !startsOf(paging).includes(param)));

/**
 * The place a reconnect resumes from: Last-Event-ID, which wins over `after` (the same cursor, as
 * a parameter); undefined when neither is given. Anything this service did not make is refused.
 */
function resumption(
  request: FastifyRequest,
  after: unknown,
  cursors: CursorCodec,
): StreamPosition | undefined {
  const lastEventId = request.headers["last-event-id"];
  const cursor = typeof lastEventId === "string" && lastEventId !== "" ? lastEventId : after;
  if (cursor === undefined || cursor === "") return undefined;
  const position = typeof cursor === "string" ? cursors.decodeStream(cursor) : undefined;
  if (position) return position;
  if (cursor === lastEventId) {
    throw new HttpError(
      "bad_request",
      "Last-Event-ID is not an event id of this service's streams.",
    );
  }
  throw new InvalidParamsError([
    {
      param: "after",
      message:
        "is not a cursor this service made; pass an event id or the cursor a settled stream ended with, as it is",
    },
  ]);
}

/**
 * A resume, but never before the window's start (or `since`), which only a scope gives it; without
 * either, the window's start; without any, undefined (the stream starts now). The retention bounds
 * it in the SQL.
 */
function startingPoint(
  { window }: PagingContract,
  params: SqlParams,
  resume: StreamPosition | undefined,
): Start | undefined {
  const start = params[window.start];
  const lower = start ? startingAt(parseIsoTimestamp(start) as bigint) : undefined;
  if (!resume) return lower;
  if (!lower || lower.horizon.micros < resume.horizon.micros) return { ...resume, resumed: true };
  const { micros } = lower.horizon;
  const newest = micros > resume.newest ? micros : resume.newest;
  return { horizon: lower.horizon, newest, delivered: resume.delivered, resumed: true };
}

/**
 * A settled run resumes where the last one ended; if the retention has passed that point, the
 * records between were dropped, and a script must know rather than carry on with a gap.
 */
function refuseDroppedRecords(
  { retention, window }: PagingContract,
  from: bigint,
  params: SqlParams,
  now: bigint,
): void {
  const value = params[retention.param];
  const days = retentionDays(retention, value);
  const starts = [window.since, window.start].filter((param) => param !== undefined).join(" or ");
  if (from > now - BigInt(days) * 86_400_000_000n) return;
  throw new InvalidParamsError([
    {
      param: "after",
      message: `is older than the ${days}-day retention of ${retention.param} ${JSON.stringify(value)}: records after it were dropped; start again with ${starts}`,
    },
  ]);
}
