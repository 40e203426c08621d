import { createRequire } from "node:module";
import rateLimit, { type FastifyRateLimitStore } from "@fastify/rate-limit";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { type RedisLink, UNAVAILABLE } from "../redis/link.ts";

/**
 * At most `perMinute` requests a minute per credential name in the enclosing scope, or the
 * credential's own limit (429 rate_limited). With `redis`, counted once across replicas.
 */
export const perKeyRateLimit = fp(
  async (app: FastifyInstance, { perMinute, redis }: { perMinute: number; redis?: RedisLink }) => {
    await app.register(rateLimit, {
      max: (request) => request.credential.rateLimitPerMinute ?? perMinute,
      timeWindow: 60_000,
      // The standard RateLimit-* names (IETF draft), which CORS exposes to browser dashboards.
      enableDraftSpec: true,
      // After authentication, so the budget belongs to the credential (see auth.ts), not to an address.
      hook: "preHandler",
      keyGenerator: (request) => request.credential.name,
      ...(redis && { store: sharedOrLocalStore(redis) }),
      errorResponseBuilder: (_request, context) => ({
        statusCode: 429,
        message: `More than ${context.max} requests a minute with this credential; retry in ${context.after}.`,
      }),
    });
  },
);

// The plugin's own two stores, which its package exports only by path.
type Store = FastifyRateLimitStore;
type Callback = Parameters<Store["incr"]>[1];
type Counted = { current: number; ttl: number };
/** What the plugin passes a store's constructor (its typings leave it open). */
type StoreOptions = { continueExceeding?: boolean; exponentialBackoff?: boolean };
const require = createRequire(import.meta.url);
const LocalStore: new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
) => Store = require("@fastify/rate-limit/store/LocalStore.js");
const RedisStore: new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: RedisLink["client"],
  key: string,
) => Store = require("@fastify/rate-limit/store/RedisStore.js");

/**
 * Counts in Redis (the plugin's own Lua script) while the link is up, in this process while it is
 * down or late: Redis being away never refuses or fails a request, it only makes the limit per replica.
 */
function sharedOrLocalStore(link: RedisLink) {
  return class SharedOrLocalStore implements Store {
    readonly #shared: Store;
    readonly #local: Store;

    constructor(options: object, stores?: { shared: Store; local: Store }) {
      const { continueExceeding = false, exponentialBackoff = false } = options as StoreOptions;
      this.#shared =
        stores?.shared ??
        new RedisStore(continueExceeding, exponentialBackoff, link.client, "rate-limit:");
      this.#local = stores?.local ?? new LocalStore(continueExceeding, exponentialBackoff);
    }

    incr(key: string, callback: Callback, timeWindow: number, max: number): void {
      const local = () => this.#local.incr(key, callback, timeWindow, max);
      link
        .run(
          () =>
            new Promise<Counted>((resolve, reject) =>
              this.#shared.incr(
                key,
                (error, counted) => (error ? reject(error) : resolve(counted as Counted)),
                timeWindow,
                max,
              ),
            ),
        )
        .then((counted) => (counted === UNAVAILABLE ? local() : callback(null, counted)), local);
    }

    child(routeOptions: Parameters<Store["child"]>[0]): Store {
      return new SharedOrLocalStore(routeOptions, {
        shared: this.#shared.child(routeOptions),
        local: this.#local.child(routeOptions),
      });
    }
  };
}
