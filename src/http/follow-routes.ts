// GET …/<name>/follow: a followable endpoint's records as they arrive, as Server-Sent Events (the
// default) or NDJSON lines, until the caller leaves, its token expires or the service closes.
import { PassThrough } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import Negotiator from "negotiator";
import { authorize, type RawQuery } from "../credentials/scope-rule.ts";
import { type EndpointDefinition, findEndpoint } from "../endpoints/catalog.ts";
import type { CursorCodec } from "../endpoints/cursor.ts";
import type { FollowHub, StartingPoint } from "../endpoints/follow.ts";
import { InvalidParamsError, parseParams } from "../endpoints/params.ts";
import type { SharedPlaces } from "../redis/shared-budgets.ts";
import { annotateRequestSpan } from "../telemetry/tracing.ts";
import { parseIsoTimestamp } from "../time.ts";
import { HttpError, sendError } from "./errors.ts";

export interface FollowRouteOptions {
  hub: FollowHub;
  maxPerCredential: number;
  /** Open streams counted once across replicas (REDIS_URL), else in this process only. */
  places?: SharedPlaces;
  /** A comment line this often keeps proxies from closing an idle event stream. */
  heartbeatMs?: number;
}

const EVENT_STREAM = "text/event-stream";
const NDJSON = "application/x-ndjson";
/** Parameters that would end or page a stream, which runs on from now. */
const NOT_FOLLOWED = ["iso_timestamp_end", "cursor"];

interface Stream {
  body: PassThrough;
  events: boolean;
}

export async function followRoutes(app: FastifyInstance, options: FollowRouteOptions) {
  const { hub, maxPerCredential, places, heartbeatMs = 15_000 } = options;
  const open = new Map<string, number>();
  const streams = new Set<Stream>();

  app.addHook("preClose", (done) => {
    for (const stream of streams) finish(stream, "shutting_down");
    hub.close();
    done();
  });

  for (const path of ["/api/endpoints/:nameOrId/follow", "/api/endpoints/query/:nameOrId/follow"]) {
    app.get<{ Params: { nameOrId: string } }>(path, async (request, reply) => {
      const endpoint = followable(request.params.nameOrId);
      request.queryLog.endpoint = endpoint.name;
      annotateRequestSpan(request, endpoint.name);
      const raw = request.query as RawQuery;
      refuseNotFollowed(raw);
      const params = parseParams(endpoint.params, authorize(request.credential, endpoint, raw));
      const from = startingPoint(request, params.iso_timestamp_start, hub.options.cursors);
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
      const credential = request.credential.name;
      // Across replicas while Redis answers; this process's own count holds either way.
      const lease = places ? await places.hold(credential, maxPerCredential) : undefined;
      const held = open.get(credential) ?? 0;
      if (lease === false || held >= maxPerCredential) {
        if (lease) lease.release();
        throw new HttpError(
          429,
          "rate_limited",
          `This credential already has ${maxPerCredential} follow streams open; close one first.`,
        );
      }
      open.set(credential, held + 1);

      const stream: Stream = { body: new PassThrough(), events: contentType === EVENT_STREAM };
      streams.add(stream);
      const heartbeat = stream.events
        ? setInterval(() => send(stream, ": keep-alive\n\n"), heartbeatMs)
        : undefined;
      const { expiresAt } = request.credential;
      const cancelExpiry = expiresAt
        ? atTime(expiresAt, () => finish(stream, "token_expired"))
        : undefined;
      const stop = hub.follow(endpoint, params, from, {
        credential,
        deliver: (record, cursor) => send(stream, frame(stream, record, cursor)),
        fail: (error) => {
          request.log.error({ err: error }, "follow stream could not catch up");
          finish(stream, "error");
        },
      });
      stream.body.once("close", () => {
        stop();
        clearInterval(heartbeat);
        cancelExpiry?.();
        streams.delete(stream);
        open.set(credential, (open.get(credential) ?? 1) - 1);
        if (lease) lease.release();
      });
      // The caller left (or the answer ended): nothing more to send.
      reply.raw.once("close", () => stream.body.destroy());
      // Headers go out now, not with the first record, which may be minutes away.
      reply.raw.once("pipe", () => reply.raw.flushHeaders());
      return streamReply(reply, stream, contentType);
    });
  }
}

function streamReply(reply: FastifyReply, stream: Stream, contentType: string): FastifyReply {
  reply
    .type(stream.events ? `${contentType}; charset=utf-8` : contentType)
    .header("cache-control", "no-store")
    // nginx and similar proxies buffer responses unless told not to.
    .header("x-accel-buffering", "no")
    // A stream's connection is not reused: kept alive after it, it would hold close() open.
    .header("connection", "close");
  return reply.send(stream.body);
}

function frame(stream: Stream, record: unknown, cursor: string): string {
  const json = JSON.stringify(record);
  return stream.events ? `id: ${cursor}\ndata: ${json}\n\n` : `${json}\n`;
}

/** Writes to a stream not yet ended: a heartbeat or a poll may come between its end and its close. */
function send(stream: Stream, text: string): void {
  if (!stream.body.writableEnded) stream.body.write(text);
}

// Node fires a timer of more than 2³¹−1 ms at once: a long wait is taken in steps.
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** Calls `then` at epoch ms `at`; returns the cancel. */
function atTime(at: number, then: () => void): () => void {
  let timer: NodeJS.Timeout;
  const wait = () => {
    const left = at - Date.now();
    timer = left > LONGEST_TIMER_MS ? setTimeout(wait, LONGEST_TIMER_MS) : setTimeout(then, left);
  };
  wait();
  return () => clearTimeout(timer);
}

/** Ends a stream, telling an event-stream client why, so that it does not reconnect at once. */
function finish(stream: Stream, reason: "shutting_down" | "token_expired" | "error"): void {
  if (stream.body.writableEnded) return;
  if (stream.events) stream.body.write(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`);
  stream.body.end();
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

/** A reconnect's Last-Event-ID wins over iso_timestamp_start; without either, the stream starts now. */
function startingPoint(
  request: FastifyRequest,
  start: string | null | undefined,
  cursors: CursorCodec,
): StartingPoint | undefined {
  const lastEventId = request.headers["last-event-id"];
  if (typeof lastEventId === "string" && lastEventId !== "") {
    const position = cursors.decode(lastEventId);
    if (!position) {
      throw new HttpError(
        400,
        "bad_request",
        "Last-Event-ID is not an event id of this service's streams.",
      );
    }
    return { micros: parseIsoTimestamp(position.timestamp) as bigint, id: position.id };
  }
  return start ? { micros: parseIsoTimestamp(start) as bigint } : undefined;
}
