// Who is asking, before anything else: the credential from `X-API-KEY` or `Authorization: Bearer`
// (an API key or an access token), or 401. Failed attempts are limited per client address, so a
// key cannot be guessed at line rate.
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from "fastify";
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

/**
 * Rejects every request of the enclosing scope without a valid credential (401), unless its route
 * makes one optional. A valid API key always passes: checking one costs a hash and a lookup, so an
 * address's failures (every client behind one proxy shares them) lock out no one who holds a key.
 * What costs more or proves nothing is refused by the throttle: an invalid key from an address over
 * its failures, and any token, whose signature verification is the cost the throttle bounds.
 */
export const requireCredential = fp(
  async (
    app: FastifyInstance,
    options: { authenticate: Authenticate; failuresPerMinute: number },
  ) => {
    // Failures per address in the current minute, token verifications still running included (as
    // failures until they pass): a burst of tokens is counted as it arrives, not as it ends.
    // Bounded, oldest addresses dropped first.
    const failures = new LRUCache<string, number>({ max: 10_000, ttl: WINDOW_MS });
    /** Counts a failure for `address`; the window runs from the first, later ones do not extend it. */
    const countFailure = (address: string) => {
      const failed = failures.get(address) ?? 0;
      failures.set(address, failed + 1, { noUpdateTTL: failed > 0 });
    };
    /** Takes back what countFailure counted for a verification that did not fail. */
    const giveBack = (address: string) => {
      const failed = failures.get(address);
      if (failed === undefined) return;
      if (failed <= 1) failures.delete(address);
      else failures.set(address, failed - 1, { noUpdateTTL: true });
    };
    /** Answers 429 when the request's address has used up its failures; false while it may try. */
    const refusedByThrottle = (
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ) => {
      if ((failures.get(request.ip) ?? 0) < options.failuresPerMinute) return false;
      const seconds = Math.max(1, Math.ceil(failures.getRemainingTTL(request.ip) / 1000));
      reply.header("retry-after", String(seconds));
      done(
        new HttpError(
          "rate_limited",
          `Too many failed authentications from this address; retry in ${seconds} seconds.`,
        ),
      );
      return true;
    };
    app.decorateRequest("credential", null as unknown as Credential);
    // Callback-style: an async hook would add its own promise and microtask turn to every request.
    app.addHook("onRequest", (request, reply, done) => {
      const secret = presentedSecret(request);
      if (secret === undefined) {
        if (request.routeOptions.config.credentialOptional) return done();
        return done(
          new HttpError(
            "unauthorized",
            "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key or token>.",
          ),
        );
      }
      let found: ReturnType<Authenticate>;
      try {
        // By the connection: a kept-alive one that presents its key again skips the key's hash.
        found = options.authenticate(secret, request.raw.socket);
      } catch (error) {
        if (error instanceof AuthenticationError) {
          if (refusedByThrottle(request, reply, done)) return;
          countFailure(request.ip);
        }
        return refuse(error, done);
      }
      if (typeof found !== "function") return accept(found, request, done);
      if (refusedByThrottle(request, reply, done)) return;
      const address = request.ip;
      countFailure(address);
      found().then(
        (credential) => {
          giveBack(address);
          accept(credential, request, done);
        },
        (error: unknown) => {
          // Only a refused token is the client's failure; the service's own errors are not.
          if (!(error instanceof AuthenticationError)) giveBack(address);
          refuse(error, done);
        },
      );
    });
  },
);

// Module-level, not closures made by the hook: a request that presents a key allocates none here.
function accept(credential: Credential, request: FastifyRequest, done: HookHandlerDoneFunction) {
  request.credential = credential;
  request.queryLog.credential = credential.name;
  done();
}

function refuse(error: unknown, done: HookHandlerDoneFunction) {
  if (!(error instanceof AuthenticationError)) return done(error as Error);
  done(new HttpError("unauthorized", error.message));
}
