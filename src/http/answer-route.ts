// GET /api/endpoints/<name> (and by id, under /query/, with a format suffix): the endpoint's answer
// for the caller's parameters, from the cache or by a query (docs/api.md).
import type { FastifyReply, FastifyRequest } from "fastify";
import type { RefreshBudget } from "../cache/refresh-budget.ts";
import type { Demand } from "../cache/result-cache.ts";
import type { Credential } from "../credentials/credential.ts";
import type { Answer } from "../endpoints/runner.ts";
import type { Format } from "./formats/format.ts";
import { renditionFor } from "./formats/time-format.ts";
import { sendAnswer } from "./reply.ts";
import type { KindHandler, RouteKind } from "./route-kind.ts";

/** The answer's handler, for `kind`. Not async: a cached hit is answered in the turn it arrived in (see runner.ts). */
export const answerHandler =
  (kind: RouteKind<Format>): KindHandler =>
  ({ requests, run, refreshBudget }) =>
  (request, reply) => {
    const { endpoint, params, format, timeFormat } = requests.enter(kind, request, reply);
    const { credential } = request;
    const answer = run(
      endpoint,
      params,
      credential.name,
      renditionFor(endpoint, format, timeFormat),
      demandOf(request.headers, refreshBudget, credential),
      // Aborted when the client goes: a query nobody waits for leaves the engine's line.
      () => request.signal,
    );
    if (answer instanceof Promise) return answer.then((found) => respond(request, reply, found));
    respond(request, reply, answer);
  };

function respond(request: FastifyRequest, reply: FastifyReply, answer: Answer): FastifyReply {
  request.queryLog.cache = answer.cache?.status;
  Object.assign(request.queryLog, answer.execution);
  if (answer.nextCursor) reply.header("link", nextLink(request.url, answer.nextCursor));
  return sendAnswer(request, reply, answer);
}

/**
 * What a request's Cache-Control asks of a cached answer (RFC 9111 §5.2.1): `no-cache` and
 * `max-age=<n>` a value at most that old (no-cache: recomputed now), `only-if-cached` no query.
 * A conditional request (If-None-Match) revalidates what the caller holds: the `no-cache` and
 * `max-age=0` that fetch and browsers add to it by themselves ask nothing more (docs/caching.md,
 * "Polling with an ETag"); a `max-age` of a second or more, which no client adds, still does.
 */
function demandOf(
  { "cache-control": header, "if-none-match": validator }: FastifyRequest["headers"],
  budget: RefreshBudget,
  credential: Credential,
): Demand | undefined {
  if (!header) return undefined;
  let maxAgeSeconds: number | undefined;
  let onlyIfCached = false;
  for (const directive of header.toLowerCase().split(",")) {
    const [name, value = ""] = directive.trim().split("=");
    const maxAge =
      name === "no-cache"
        ? 0
        : name === "max-age" && /^\d+$/.test(value)
          ? Number(value)
          : undefined;
    const addedByClient = maxAge === 0 && Boolean(validator);
    if (maxAge !== undefined && !addedByClient) {
      maxAgeSeconds = Math.min(maxAgeSeconds ?? maxAge, maxAge);
    }
    if (name === "only-if-cached") onlyIfCached = true;
  }
  // Directives that ask nothing of a held value (max-stale, a browser's own) leave a plain request.
  if (maxAgeSeconds === undefined && !onlyIfCached) return undefined;
  return {
    mayRecompute: () => budget.spend(credential.name, credential.forcedRefreshPerMinute),
    ...(maxAgeSeconds !== undefined && { maxAgeSeconds }),
    ...(onlyIfCached && { onlyIfCached }),
  };
}

/** RFC 8288's next link: the path the caller used, its parameters, and the next page's cursor. */
function nextLink(url: string, cursor: string): string {
  const queryAt = url.indexOf("?");
  const query = new URLSearchParams(queryAt === -1 ? "" : url.slice(queryAt + 1));
  query.set("cursor", cursor);
  return `<${queryAt === -1 ? url : url.slice(0, queryAt)}?${query}>; rel="next"`;
}
