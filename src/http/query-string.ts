// The query string, parsed as Fastify would, but refused (400 bad_request) when it is not validly
// percent-encoded: `?project=%ZZ` must not reach validation as the literal text "%ZZ".

import querystring from "fast-querystring";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { BADLY_ENCODED_URL, HttpError } from "./errors.ts";

// The router calls the parser outside any error handling (a throw there is an uncaught exception),
// so a bad query string is marked by this object and refused by the hook below.
const BADLY_ENCODED: Record<string, string> = Object.freeze(Object.create(null));

export function parseQueryString(text: string): Record<string, unknown> {
  if (text.length === 0) return {};
  if (text.includes("%") && !isValidlyEncoded(text)) return BADLY_ENCODED;
  return querystring.parse(text);
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
      return done(new HttpError(400, "bad_request", BADLY_ENCODED_URL));
    }
    done();
  });
});
