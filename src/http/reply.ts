import type { FastifyReply, FastifyRequest } from "fastify";
import type { Answer } from "../endpoints/runner.ts";

/**
 * Sends an endpoint's answer (in whichever format: its headers carry its Content-Type) with its cache
 * headers; a matching If-None-Match gets a bodyless 304.
 */
export function sendAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: Answer,
): FastifyReply {
  reply.headers(answer.payload.headers);
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
