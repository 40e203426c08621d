// The query string, parsed as Fastify would, but refused (400 bad_request) when it is not validly
// percent-encoded: `?project=%ZZ` must not reach validation as the literal text "%ZZ".

import querystring from "fast-querystring";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { LRUCache } from "lru-cache";
import { BADLY_ENCODED_URL, HttpError } from "./errors.ts";

// The router calls the parser outside any error handling (a throw there is an uncaught exception),
// so a bad query string is marked by this object and refused by the hook below.
const BADLY_ENCODED: Record<string, string> = Object.freeze(Object.create(null));

// Dashboards repeat a few query strings: each is parsed once into a frozen object, which is then
// the same object on every request that sends it, so what is derived from it (validated
// parameters) is found by identity. Bounded by count and by the texts' length.
const parsed = new LRUCache<string, Readonly<Record<string, unknown>>>({
  max: 1_000,
  maxSize: 4 * 1024 * 1024,
  sizeCalculation: (_query, text) => text.length,
});
const EMPTY = Object.freeze({});

export function parseQueryString(text: string): Readonly<Record<string, unknown>> {
  if (text.length === 0) return EMPTY;
  let query = parsed.get(text);
  if (query === undefined) {
    query =
      text.includes("%") && !isValidlyEncoded(text)
        ? BADLY_ENCODED
        : Object.freeze(querystring.parse(text));
    parsed.set(text, query);
  }
  return query;
}

function isValidlyEncoded(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

export const refuseBadlyEncodedQuery = fp(async (app: FastifyInstance) => {
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.query === BADLY_ENCODED) {
      return done(new HttpError("bad_request", BADLY_ENCODED_URL));
    }
    done();
  });
});
