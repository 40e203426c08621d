// Who is asking, before anything else: the credential from `X-API-KEY` or `Authorization: Bearer`
// (an API key or an access token), or 401. Failed attempts are limited per client address, so a
// key cannot be guessed at line rate.
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { LRUCache } from "lru-cache";
import { type Authenticate, AuthenticationError } from "../credentials/authenticate.ts";
import type { Credential } from "../credentials/credential.ts";
import { HttpError } from "./errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    credential: Credential;
  }
  interface FastifyContextConfig {
    /**
     * The route also answers requests that present no credential; its `request.credential` is
     * then null. A credential that is presented must still be valid.
     */
    credentialOptional?: boolean;
  }
}

const WINDOW_MS = 60_000;

/** The key or token a request presents, if any. */
export function presentedSecret(request: FastifyRequest): string | undefined {
  const header = request.headers["x-api-key"];
  if (typeof header === "string" && header !== "") return header;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
  return bearer?.[1];
}

/** Rejects every request of the enclosing scope without a valid credential (401), unless its route makes one optional. */
export const requireCredential = fp(
  async (
    app: FastifyInstance,
    options: { authenticate: Authenticate; failuresPerMinute: number },
  ) => {
    // Failed attempts per address in the current minute; bounded, oldest addresses dropped first.
    const failures = new LRUCache<string, number>({ max: 10_000, ttl: WINDOW_MS });
    app.decorateRequest("credential", null as unknown as Credential);
    // Callback-style: an async hook would add its own promise and microtask turn to every request.
    app.addHook("onRequest", (request, reply, done) => {
      // No lookup (nor request.ip) while no address has failed: the common case.
      const failed = failures.size === 0 ? 0 : (failures.get(request.ip) ?? 0);
      if (failed >= options.failuresPerMinute) {
        const seconds = Math.max(1, Math.ceil(failures.getRemainingTTL(request.ip) / 1000));
        reply.header("retry-after", String(seconds));
        return done(
          new HttpError(
            429,
            "rate_limited",
            `Too many failed authentications from this address; retry in ${seconds} seconds.`,
          ),
        );
      }
      const secret = presentedSecret(request);
      if (secret === undefined) {
        if (request.routeOptions.config.credentialOptional) return done();
        return done(
          new HttpError(
            401,
            "unauthorized",
            "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key or token>.",
          ),
        );
      }
      const accept = (credential: Credential) => {
        request.credential = credential;
        request.queryLog.credential = credential.name;
        done();
      };
      const refuse = (error: unknown) => {
        if (!(error instanceof AuthenticationError)) return done(error as Error);
        // The window runs from the first failure: later ones do not extend it.
        failures.set(request.ip, failed + 1, { noUpdateTTL: failed > 0 });
        done(new HttpError(401, "unauthorized", error.message));
      };
      let found: ReturnType<Authenticate>;
      try {
        found = options.authenticate(secret);
      } catch (error) {
        return refuse(error);
      }
      if (found instanceof Promise) found.then(accept, refuse);
      else accept(found);
    });
  },
);
