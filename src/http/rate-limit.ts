import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * At most `perMinute` requests a minute per credential name in the enclosing scope, or the
 * credential's own limit (429 rate_limited).
 */
export const perKeyRateLimit = fp(
  async (app: FastifyInstance, { perMinute }: { perMinute: number }) => {
    await app.register(rateLimit, {
      max: (request) => request.credential.rateLimitPerMinute ?? perMinute,
      timeWindow: 60_000,
      // The standard RateLimit-* names (IETF draft), which CORS exposes to browser dashboards.
      enableDraftSpec: true,
      // After authentication, so the budget belongs to the credential (see auth.ts), not to an address.
      hook: "preHandler",
      keyGenerator: (request) => request.credential.name,
      errorResponseBuilder: (_request, context) => ({
        statusCode: 429,
        message: `More than ${context.max} requests a minute with this credential; retry in ${context.after}.`,
      }),
    });
  },
);
