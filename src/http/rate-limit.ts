import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/** At most `perMinute` requests a minute per API key in the enclosing scope (429 rate_limited). */
export const perKeyRateLimit = fp(
  async (app: FastifyInstance, { perMinute }: { perMinute: number }) => {
    await app.register(rateLimit, {
      max: perMinute,
      timeWindow: 60_000,
      // After authentication, so the budget belongs to the key (see auth.ts), not to an address.
      hook: "preHandler",
      keyGenerator: (request) => `key-${request.apiKeyIndex}`,
      errorResponseBuilder: (_request, context) => ({
        statusCode: 429,
        message: `More than ${context.max} requests a minute with this key; retry in ${context.after}.`,
      }),
    });
  },
);
