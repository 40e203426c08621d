// What anyone may fetch without a credential (the docs page and its assets, the OpenAPI document,
// the explorer page and its files) is counted per client address: megabytes of scripts cost a
// client one request each, and no credential's budget stands in the way. Counted across replicas
// in Redis while it answers, like the per-credential limit.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import type { RedisLink } from "../redis/link.ts";
import { countRequest, minuteCounter } from "./rate-limit.ts";

// Addresses held at once; one forgotten starts a fresh minute, which takes many addresses to cause.
const ADDRESSES = 10_000;

const fromAddress = (max: number, seconds: string) =>
  `More than ${max} requests a minute from this address without a credential; retry in ${seconds} seconds.`;

/** A hook (onRequest or preHandler) counting a request against its client address's minute. */
export type AnonymousLimit = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

/** Counts each request against its client address's minute; past it, 429 rate_limited. */
export function anonymousLimit(options: { perMinute: number; redis?: RedisLink }): AnonymousLimit {
  const store = minuteCounter({
    keys: ADDRESSES,
    redis: options.redis,
    namespace: "anonymous-rate-limit:",
  });
  return (request, reply, done) =>
    countRequest(store, request.ip, options.perMinute, reply, done, fromAddress);
}
