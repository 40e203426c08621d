// GET …/<name>/watch: a cached endpoint's answer for the caller's parameters, then each new value the
// cache stores for them (a new ETag), as Server-Sent Events, until the caller leaves, its credential
// ends, it reads too slowly or the service closes. Watching queries nothing: the first answer is a
// request's (usually a hit), every later one is the key's warming, which watchers keep going.
import type { CacheAnswer, CachePolicy } from "../cache/result-cache.ts";
import type { CachedEndpoint } from "../endpoints/catalog.ts";
import type { MediaFormat } from "./formats/format.ts";
import { json } from "./formats/json.ts";
import { renditionFor } from "./formats/time-format.ts";
import { cacheStatus } from "./reply.ts";
import type { KindHandler, RouteKind } from "./route-kind.ts";
import { sendStream, sendStreamHead } from "./streams/stream-places.ts";

/** The watch's handler, for `kind`; none without a cache to watch. */
export const watchHandler =
  (kind: RouteKind<MediaFormat, CachedEndpoint>): KindHandler =>
  ({ run, watch, requests, reserve, watchStats: stats }) =>
    watch &&
    (async (request, reply) => {
      const { endpoint, params, format, timeFormat } = requests.enter(kind, request, reply);
      // Each value as GET answers it in JSON, its instants in the time format asked for.
      const presented = renditionFor(endpoint, json, timeFormat);
      const { credential } = request;
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
      if (request.method === "HEAD") {
        unwatch();
        return sendStreamHead(reply, place, true, format.contentType);
      }
      const stream = place.open(reply, true, endpoint);
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
        const body = (presented ? presented.render(answer.payload) : answer.payload).body;
        if (stream.event("result", answer.etag, body, freshness(answer, endpoint))) {
          stats.eventsSent++;
        }
      };
      send(first);
      if (told) send(told);
      return sendStream(reply, stream, format.contentType);
    });

/** How fresh the value is, as the Cache-Status and Age headers of a GET would say. */
function freshness(answer: CacheAnswer, endpoint: { cache: CachePolicy }): string[] {
  const ttlLeft = endpoint.cache.ttlSeconds - answer.ageSeconds;
  return [`cache-status: ${cacheStatus(answer, ttlLeft)}`, `age: ${answer.ageSeconds}`];
}

function lastEventId(header: string | string[] | undefined): string | undefined {
  return typeof header === "string" && header !== "" ? header : undefined;
}
