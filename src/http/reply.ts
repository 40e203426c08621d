import type { FastifyReply, FastifyRequest } from "fastify";
import type { Payload } from "../cache/payload.ts";
import type { CacheAnswer, CacheStatus } from "../cache/result-cache.ts";
import type { Answer, Execution } from "../endpoints/runner.ts";

/**
 * Sends an endpoint's answer (in whichever format: its headers carry its Content-Type) with its cache
 * headers, how fresh it is (Cache-Status, RFC 9211) and where the time went (Server-Timing); a
 * matching If-None-Match gets a bodyless 304.
 */
export function sendAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: Answer,
): FastifyReply {
  const { payload, cache, execution } = answer;
  const notModified =
    cache !== undefined && matchesEtag(request.headers["if-none-match"], cache.etag);
  // CORS allows every origin, so a browser dashboard may read the timings too.
  reply
    .headers(notModified ? withoutContentHeaders(payload.headers) : payload.headers)
    .header("timing-allow-origin", "*");
  if (!cache) {
    return reply
      .header("cache-control", "no-store")
      .header("cache-status", UNCACHED)
      .header("server-timing", serverTiming(reply, "MISS", execution))
      .send(payload.body);
  }
  // max-age is the whole TTL and Age the value's age: a client's seconds left are max-age − Age
  // (RFC 9111 §4.2.3). max-age=<seconds left> beside Age would count the age twice.
  reply
    .header("x-cache", cache.status)
    .header("age", String(cache.ageSeconds))
    .header("cache-control", cacheControl(cache.ttlSeconds))
    .header("etag", cache.etag)
    .header("cache-status", cacheStatus(cache, cache.ttlSeconds - cache.ageSeconds))
    .header("server-timing", serverTiming(reply, cache.status, execution));
  if (notModified) return reply.code(304).send();
  return reply.send(bodyBytes(payload));
}

/**
 * The headers of a 304: none that describe the body it does not carry (Content-Type and the like,
 * RFC 9110 §15.4.5), which validating proxies would otherwise hold to a body that is not there.
 */
function withoutContentHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !name.startsWith("content-")),
  );
}

/** An endpoint without a cache: nothing is ever stored for its URI. */
const UNCACHED = "query-service; fwd=uri-miss";

const FORWARDED: Partial<Record<CacheStatus, string>> = {
  MISS: "query-service; fwd=miss; stored",
  // The caller asked for a fresher value (Cache-Control), and the new one is stored for everyone.
  REFRESH: "query-service; fwd=request; stored",
};

// One string per detail and seconds left: a hit's Cache-Status is built once a second, not per
// request, and found without building a key.
const cacheStatuses = new Map<string | undefined, Map<number, string>>();
export function cacheStatus(
  { status, refused }: Pick<CacheAnswer, "status" | "refused">,
  ttlLeft: number,
): string {
  const forwarded = FORWARDED[status];
  if (forwarded) return forwarded;
  const detail = refused ?? (status === "STALE" ? "stale" : undefined);
  let byTtlLeft = cacheStatuses.get(detail);
  if (byTtlLeft === undefined) {
    byTtlLeft = new Map();
    cacheStatuses.set(detail, byTtlLeft);
  }
  let value = byTtlLeft.get(ttlLeft);
  if (value === undefined) {
    value = `query-service; hit; ttl=${Math.max(0, ttlLeft)}${detail ? `; detail=${detail}` : ""}`;
    byTtlLeft.set(ttlLeft, value);
  }
  return value;
}

function serverTiming(reply: FastifyReply, status: string, execution?: Execution): string {
  const engine = execution ? `, engine;dur=${execution.engineMs}` : "";
  return `cache;desc=${status}${engine}, total;dur=${Math.round(reply.elapsedTime * 10) / 10}`;
}

// A cached payload is sent many times: its UTF-8 bytes are made once, kept as long as the payload is.
// Its headers always name its Content-Type, so Fastify sends the Buffer as it would the string.
const encoded = new WeakMap<Payload, Buffer>();
function bodyBytes(payload: Payload): Buffer {
  let bytes = encoded.get(payload);
  if (bytes === undefined) {
    bytes = Buffer.from(payload.body);
    encoded.set(payload, bytes);
  }
  return bytes;
}

const cacheControls = new Map<number, string>();
function cacheControl(ttlSeconds: number): string {
  let value = cacheControls.get(ttlSeconds);
  if (value === undefined) {
    value = `private, max-age=${ttlSeconds}`;
    cacheControls.set(ttlSeconds, value);
  }
  return value;
}

// If-None-Match compares weakly (RFC 9110 §13.1.2): a W/ prefix does not prevent a match.
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((tag) => {
    const candidate = tag.trim();
    return candidate === "*" || candidate.replace(/^W\//, "") === etag;
  });
}
