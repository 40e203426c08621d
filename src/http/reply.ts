import type { FastifyReply, FastifyRequest } from "fastify";
import type { Payload } from "../cache/result-cache.ts";
import type { Answer } from "../endpoints/runner.ts";
import type { QueryResult } from "../engines/engine.ts";

/** The wire form of a result: `{"result":[...]}`, and a header when rows were cut at the cap. */
export function serializeResult(result: QueryResult): Payload {
  return {
    body: JSON.stringify({ result: result.rows }),
    headers: result.truncated ? { "x-result-truncated": "true" } : {},
  };
}

/** Sends an endpoint's answer with its cache headers; a matching If-None-Match gets a bodyless 304. */
export function sendAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: Answer,
): FastifyReply {
  reply.type("application/json; charset=utf-8").headers(answer.payload.headers);
  const { cache } = answer;
  if (!cache) return reply.header("cache-control", "no-store").send(answer.payload.body);
  // max-age is the whole TTL and Age the value's age: a client's seconds left are max-age − Age
  // (RFC 9111 §4.2.3). max-age=<seconds left> beside Age would count the age twice.
  reply
    .header("x-cache", cache.status)
    .header("age", String(cache.ageSeconds))
    .header("cache-control", `private, max-age=${cache.ttlSeconds}`)
    .header("etag", cache.etag);
  if (matchesEtag(request.headers["if-none-match"], cache.etag)) return reply.code(304).send();
  return reply.send(answer.payload.body);
}

// If-None-Match compares weakly (RFC 9110 §13.1.2): a W/ prefix does not prevent a match.
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((tag) => {
    const candidate = tag.trim();
    return candidate === "*" || candidate.replace(/^W\//, "") === etag;
  });
}
