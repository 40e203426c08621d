// GET …/<name>/watch: a cached endpoint's answer for the caller's parameters, then each new value the
// cache stores for them (a new ETag), as Server-Sent Events, until the caller leaves, its credential
// ends, it reads too slowly or the service closes. Watching queries nothing: the first answer is a
// request's (usually a hit), every later one is the key's warming, which watchers keep going.
import type { FastifyInstance } from "fastify";
import Negotiator from "negotiator";
import type { CacheAnswer, CachePolicy } from "../cache/result-cache.ts";
import { authorize, type RawQuery } from "../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../endpoints/catalog.ts";
import { parseParams } from "../endpoints/params.ts";
import type { RunEndpoint, WatchEndpoint } from "../endpoints/runner.ts";
import { annotateRequestSpan } from "../telemetry/tracing.ts";
import { granted, HttpError, sendError } from "./errors.ts";
import { WATCH_SCHEMA } from "./openapi/endpoint-schemas.ts";
import { cacheStatus } from "./reply.ts";
import { type ReservePlace, sendStream } from "./streams/stream-places.ts";

export interface WatchStats {
  open: number;
  eventsSent: number;
}

export interface WatchRouteOptions {
  catalog: Catalog;
  run: RunEndpoint;
  watch: WatchEndpoint;
  reserve: ReservePlace;
  /** Counted as watches open, close and send. */
  stats: WatchStats;
}

const EVENT_STREAM = "text/event-stream";

export async function watchRoutes(app: FastifyInstance, options: WatchRouteOptions) {
  const { catalog, run, watch, reserve, stats } = options;
  for (const path of ["/api/endpoints/:nameOrId/watch", "/api/endpoints/query/:nameOrId/watch"]) {
    app.get<{ Params: { nameOrId: string } }>(
      path,
      { schema: WATCH_SCHEMA },
      async (request, reply) => {
        const endpoint = watchable(catalog, request.params.nameOrId);
        request.queryLog.endpoint = endpoint.name;
        annotateRequestSpan(request, endpoint.name);
        const { credential } = request;
        const params = parseParams(
          endpoint.params,
          granted(authorize(credential, endpoint, request.query as RawQuery)),
        );
        if (!new Negotiator(request).mediaType([EVENT_STREAM])) {
          return sendError(
            reply,
            "not_acceptable",
            `Accept does not take ${EVENT_STREAM}, the only format a watch has.`,
            { available: [EVENT_STREAM] },
          );
        }
        const place = await reserve(request);
        // Told from before the first answer, so that no value stored meanwhile is missed.
        let told: CacheAnswer | undefined;
        let send = (answer: CacheAnswer) => {
          told = answer;
        };
        const unwatch = watch(endpoint, params, (answer) => send(answer));
        let first: CacheAnswer;
        try {
          // A cached endpoint's answer always says how it was cached.
          const { payload, cache } = await run(endpoint, params, credential.name);
          first = { ...(cache as Omit<CacheAnswer, "payload">), payload };
        } catch (error) {
          // Answered in the error envelope: no stream was opened.
          unwatch();
          place.release();
          throw error;
        }
        const stream = place.open(reply, true);
        stats.open++;
        stream.body.once("close", () => {
          unwatch();
          stats.open--;
        });
        // A reconnect that holds the current value is sent nothing until it changes; a value older
        // than one sent (told while the first answer was on its way) is not sent at all.
        let sentEtag = lastEventId(request.headers["last-event-id"]);
        let sentComputedAt = Number.NEGATIVE_INFINITY;
        send = (answer) => {
          if (answer.computedAt < sentComputedAt) return;
          sentComputedAt = answer.computedAt;
          if (answer.etag === sentEtag) return;
          sentEtag = answer.etag;
          if (
            stream.event("result", answer.etag, answer.payload.body, freshness(answer, endpoint))
          ) {
            stats.eventsSent++;
          }
        };
        send(first);
        if (told) send(told);
        return sendStream(reply, stream, EVENT_STREAM);
      },
    );
  }
}

/** How fresh the value is, as the Cache-Status and Age headers of a GET would say. */
function freshness(answer: CacheAnswer, endpoint: { cache: CachePolicy }): string[] {
  const ttlLeft = endpoint.cache.ttlSeconds - answer.ageSeconds;
  return [`cache-status: ${cacheStatus(answer, ttlLeft)}`, `age: ${answer.ageSeconds}`];
}

function lastEventId(header: string | string[] | undefined): string | undefined {
  return typeof header === "string" && header !== "" ? header : undefined;
}

function watchable(
  catalog: Catalog,
  nameOrId: string,
): EndpointDefinition & { cache: CachePolicy } {
  const endpoint = catalog.find(nameOrId);
  if (endpoint?.cache) return endpoint as EndpointDefinition & { cache: CachePolicy };
  const hint = endpoint?.follow
    ? `${endpoint.name} is not cached, so its answer has no value to watch: follow its records at /api/endpoints/${endpoint.name}/follow.`
    : "GET /api/endpoints lists which endpoints are cached, and so can be watched.";
  throw new HttpError(
    "endpoint_not_found",
    `No watchable endpoint is named or has the id "${nameOrId}". ${hint}`,
  );
}
