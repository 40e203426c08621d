// GET …/<name>/follow: a followable endpoint's records as they arrive, as Server-Sent Events (the
// default) or NDJSON lines, until the caller leaves, its credential ends, it reads too slowly or
// the service closes.
import type { FastifyInstance, FastifyRequest } from "fastify";
import Negotiator from "negotiator";
import { authorize, type RawQuery } from "../credentials/scope-rule.ts";
import { type EndpointDefinition, findEndpoint } from "../endpoints/catalog.ts";
import type { CursorCodec } from "../endpoints/cursor.ts";
import type { FollowHub, StartingPoint } from "../endpoints/follow.ts";
import {
  InvalidParamsError,
  parseParams,
  type SqlParams,
  withWindowStart,
} from "../endpoints/params.ts";
import { retentionDays } from "../endpoints/retention.ts";
import { annotateRequestSpan } from "../telemetry/tracing.ts";
import { formatTimestamp, parseIsoTimestamp } from "../time.ts";
import { HttpError, sendError } from "./errors.ts";
import { type ReservePlace, sendStream } from "./streams/stream-places.ts";

export interface FollowRouteOptions {
  hub: FollowHub;
  /** Where each stream takes its place (shared with every stream kind). */
  reserve: ReservePlace;
}

const EVENT_STREAM = "text/event-stream";
const NDJSON = "application/x-ndjson";
/** Parameters that would end or page a stream, which runs on from now. */
export const NOT_FOLLOWED = ["iso_timestamp_end", "cursor"];

export async function followRoutes(app: FastifyInstance, options: FollowRouteOptions) {
  const { hub, reserve } = options;
  app.addHook("preClose", (done) => {
    hub.close();
    done();
  });

  for (const path of ["/api/endpoints/:nameOrId/follow", "/api/endpoints/query/:nameOrId/follow"]) {
    app.get<{ Params: { nameOrId: string } }>(path, async (request, reply) => {
      const endpoint = followable(request.params.nameOrId);
      request.queryLog.endpoint = endpoint.name;
      annotateRequestSpan(request, endpoint.name);
      const { after, until, ...raw } = request.query as RawQuery;
      refuseNotFollowed(raw);
      const authorized = authorize(request.credential, endpoint, raw);
      refusePinnedEnd(authorized);
      const now = hub.now();
      // `since` starts the stream as iso_timestamp_start would.
      const params = withWindowStart(parseParams(endpoint.params, authorized), now);
      const settled = settledMode(until);
      // A start the caller gave that would skip records is refused; one its scope fixes is what the
      // key may see at all, so a run starts there.
      const ownStart = raw.since !== undefined || raw.iso_timestamp_start !== undefined;
      const from = startingPoint(request, params, hub.options.cursors, after, settled && ownStart);
      // A settled run ends with records that can no longer be overtaken by a late one.
      const settledUntil = settled ? now - BigInt(hub.options.lagMs) * 1000n : undefined;
      if (settled && from?.resumed) refuseDroppedRecords(from, params, now);
      const contentType = new Negotiator(request).mediaType([EVENT_STREAM, NDJSON]);
      if (!contentType) {
        return sendError(
          reply,
          406,
          "not_acceptable",
          `Accept names none of the formats a follow stream has: ${EVENT_STREAM}, ${NDJSON}.`,
          { available: [EVENT_STREAM, NDJSON] },
        );
      }
      const place = await reserve(request);
      const stream = place.open(reply, contentType === EVENT_STREAM);
      // Where it starts, as an event id: a client that reconnects before any record came resumes
      // there, with nothing skipped and no start of its own to compute (or to clash with a scope).
      const start = from ?? { micros: now };
      stream.position(
        hub.options.cursors.encode({
          timestamp: formatTimestamp(start.micros),
          ...(start.id !== undefined && { id: start.id }),
        }),
      );
      const stop = hub.follow(
        endpoint,
        params,
        from,
        {
          credential: request.credential.name,
          deliver: (record, cursor) => stream.record(record, cursor),
          ready: () => stream.ready(),
          fail: (error) => {
            request.log.error({ err: error }, "follow stream could not catch up");
            stream.end("error");
          },
          settled: (cursor) => stream.end("settled", { cursor }),
        },
        settledUntil,
      );
      stream.body.once("close", stop);
      return sendStream(reply, stream, contentType);
    });
  }
}

function followable(nameOrId: string): EndpointDefinition {
  const endpoint = findEndpoint(nameOrId);
  if (endpoint?.follow) return endpoint;
  throw new HttpError(
    404,
    "endpoint_not_found",
    `No followable endpoint is named or has the id "${nameOrId}"; GET /api/endpoints lists which have a follow path.`,
  );
}

function refuseNotFollowed(query: RawQuery): void {
  const given = NOT_FOLLOWED.filter((param) => query[param] !== undefined);
  if (given.length === 0) return;
  throw new InvalidParamsError(
    given.map((param) => ({
      param,
      message: "not taken by a follow stream, which runs from iso_timestamp_start or now onwards",
    })),
  );
}

/** The caller could not give an end (refused above): one there is the scope's, which a stream cannot keep. */
function refusePinnedEnd(authorized: RawQuery): void {
  if (authorized.iso_timestamp_end === undefined) return;
  throw new HttpError(
    403,
    "forbidden",
    "This credential's scope fixes iso_timestamp_end, and a follow stream runs on past any end: call the endpoint itself for that range.",
  );
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

/** Where a stream starts, and whether from a cursor (a resume) rather than an instant. */
type Start = StartingPoint & { resumed?: boolean };

/**
 * A reconnect's Last-Event-ID wins over `after` (the same cursor, as a parameter), and either over
 * iso_timestamp_start (or `since`), but never reaches before it (which a scope may fix); without any,
 * the stream starts now. The tier's retention bounds it in the SQL.
 */
function startingPoint(
  request: FastifyRequest,
  params: SqlParams,
  cursors: CursorCodec,
  after: unknown,
  refuseSkips: boolean,
): Start | undefined {
  const start = params.iso_timestamp_start;
  const lower: StartingPoint | undefined = start
    ? { micros: parseIsoTimestamp(start) as bigint }
    : undefined;
  const lastEventId = request.headers["last-event-id"];
  const cursor = typeof lastEventId === "string" && lastEventId !== "" ? lastEventId : after;
  if (cursor === undefined || cursor === "") return lower;
  const position = typeof cursor === "string" ? cursors.decode(cursor) : undefined;
  if (!position && cursor === lastEventId) {
    throw new HttpError(
      400,
      "bad_request",
      "Last-Event-ID is not an event id of this service's streams.",
    );
  }
  if (!position) {
    throw new InvalidParamsError([
      {
        param: "after",
        message:
          "is not a cursor this service made; pass an event id or the cursor a settled stream ended with, as it is",
      },
    ]);
  }
  const resume = { micros: parseIsoTimestamp(position.timestamp) as bigint, id: position.id };
  if (!lower || lower.micros < resume.micros) return { ...resume, resumed: true };
  // A settled run that started later than its checkpoint would skip what lies between, unseen.
  if (refuseSkips && lower.micros > resume.micros) {
    throw new InvalidParamsError([
      {
        param: "after",
        message:
          "is before the start that your since or iso_timestamp_start gives this run: the records between would be skipped; resume with after alone",
      },
    ]);
  }
  return lower;
}

/**
 * A settled run resumes where the last one ended; if the tier's retention has passed that point, the
 * records between were dropped, and a script must know rather than carry on with a gap.
 */
function refuseDroppedRecords(from: StartingPoint, params: SqlParams, now: bigint): void {
  const days = retentionDays(params.project_tier);
  if (from.micros > now - BigInt(days) * 86_400_000_000n) return;
  throw new InvalidParamsError([
    {
      param: "after",
      message: `is older than the ${days}-day retention of project_tier ${JSON.stringify(params.project_tier)}: records after it were dropped; start again with since or iso_timestamp_start`,
    },
  ]);
}
