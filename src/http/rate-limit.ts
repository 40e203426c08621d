// At most `perMinute` requests a minute per credential (or the credential's own limit), counted by
// @fastify/rate-limit's stores: its LRU in this process, its Lua script in Redis across replicas.
// The hook is ours: the plugin's awaits its key, its limit and its store in turn (five promises a
// request), the largest single cost of a cached hit (bench/cache.ts); this one is a callback.
import { createRequire } from "node:module";
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import fp from "fastify-plugin";
import { type RedisLink, UNAVAILABLE } from "../redis/link.ts";
import { HttpError } from "./errors.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** false: the route's requests are not counted (a scraper's, a static page's). */
    rateLimit?: false;
  }
}

const WINDOW_MS = 60_000;

type Counted = { current: number; ttl: number };
type Callback = (error: Error | null, counted?: Counted) => void;
/** What the plugin's stores do: count one more for `key` in a window of `timeWindow` ms. */
type Store = { incr(key: string, callback: Callback, timeWindow: number, max: number): void };

// The plugin's two stores, which its package exports only by path.
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
 * Every request of the enclosing scope counts against its credential's minute, after
 * authentication; past the limit, 429 rate_limited with Retry-After. The standard RateLimit-*
 * headers (IETF draft), which CORS exposes to browser dashboards, go on every counted answer.
 */
export const perKeyRateLimit = fp(
  async (app: FastifyInstance, { perMinute, redis }: { perMinute: number; redis?: RedisLink }) => {
    const local = new LocalStore(false, false);
    const store = redis ? sharedOrLocal(redis, local) : local;
    const count: preHandlerHookHandler = (request, reply, done) => {
      const max = request.credential.rateLimitPerMinute ?? perMinute;
      store.incr(
        request.credential.name,
        (error, counted) => {
          if (error) return done(error);
          const { current, ttl } = counted as Counted;
          const seconds = String(Math.ceil(ttl / 1000));
          reply
            .header("ratelimit-limit", String(max))
            .header("ratelimit-remaining", String(Math.max(0, max - current)))
            .header("ratelimit-reset", seconds);
          if (current <= max) return done();
          reply.header("retry-after", seconds);
          done(
            new HttpError(
              429,
              "rate_limited",
              `More than ${max} requests a minute with this credential; retry in ${seconds} seconds.`,
            ),
          );
        },
        WINDOW_MS,
        max,
      );
    };
    // Per route, as it is added: a request does not ask whether its route is exempt.
    app.addHook("onRoute", (route) => {
      if (route.config?.rateLimit === false) return;
      route.preHandler = [route.preHandler ?? [], count].flat();
    });
  },
);

/**
 * Counts in Redis while the link is up, in this process while it is down or late: Redis being
 * away never refuses or fails a request, it only makes the limit per replica.
 */
function sharedOrLocal(link: RedisLink, local: Store): Store {
  const shared = new RedisStore(false, false, link.client, "rate-limit:");
  return {
    incr(key: string, callback: Callback, timeWindow: number, max: number): void {
      const locally = () => local.incr(key, callback, timeWindow, max);
      link
        .run(
          () =>
            new Promise<Counted>((resolve, reject) =>
              shared.incr(
                key,
                (error, counted) => (error || !counted ? reject(error) : resolve(counted)),
                timeWindow,
                max,
              ),
            ),
        )
        .then(
          (counted) => (counted === UNAVAILABLE ? locally() : callback(null, counted)),
          locally,
        );
    },
  };
}
