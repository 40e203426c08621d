// At most `perMinute` requests a minute per credential (or the credential's own limit), counted by
// @fastify/rate-limit's stores: its LRU in this process, its Lua script in Redis across replicas.
// The anonymous pages' per-address limit counts the same way.
// The hook is ours: the plugin's awaits its key, its limit and its store in turn (five promises a
// request), the largest single cost of a cached hit (bench/cache.ts); this one is a callback.
import { createRequire } from "node:module";
import type {
  FastifyInstance,
  FastifyReply,
  HookHandlerDoneFunction,
  preHandlerHookHandler,
} from "fastify";
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
export type Store = {
  incr(key: string, callback: Callback, timeWindow: number, max: number): void;
};

// The plugin's two stores, which its package exports only by path.
const require = createRequire(import.meta.url);
const LocalStore: new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  size: number,
) => Store = require("@fastify/rate-limit/store/LocalStore.js");
const RedisStore: new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: RedisLink["client"],
  key: string,
) => Store = require("@fastify/rate-limit/store/RedisStore.js");

// Names a credential can have beyond those counted at startup: tokens' subjects, keys added to the
// keys file later. The LRU holds this many more, so no credential in use loses its count to others.
const UNLISTED_NAMES = 10_000;

/**
 * Every request of the enclosing scope counts against its credential's minute, after
 * authentication; past the limit, 429 rate_limited with Retry-After. The standard RateLimit-*
 * headers (IETF draft), which CORS exposes to browser dashboards, go on every counted answer.
 */
export const perKeyRateLimit = fp(
  async (
    app: FastifyInstance,
    {
      perMinute,
      credentials,
      redis,
    }: {
      perMinute: number;
      /** How many named credentials there are (API keys, keys-file entries). */
      credentials: number;
      redis?: RedisLink;
    },
  ) => {
    // A credential the LRU forgot would start a fresh minute: it holds every named one, and more.
    const store = minuteCounter({
      keys: credentials + UNLISTED_NAMES,
      redis,
      namespace: "rate-limit:",
    });
    const count: preHandlerHookHandler = (request, reply, done) => {
      const max = request.credential.rateLimitPerMinute ?? perMinute;
      countRequest(store, request.credential.name, max, reply, done, byCredential);
    };
    // Per route, as it is added: a request does not ask whether its route is exempt.
    app.addHook("onRoute", (route) => {
      if (route.config?.rateLimit === false) return;
      route.preHandler = [route.preHandler ?? [], count].flat();
    });
  },
);

const byCredential = (max: number, seconds: string) =>
  `More than ${max} requests a minute with this credential; retry in ${seconds} seconds.`;

/**
 * Counts requests per key in one-minute windows: in Redis under `namespace` across replicas while
 * it answers, else in this process, in an LRU of `keys` entries.
 */
export function minuteCounter(options: {
  keys: number;
  redis?: RedisLink;
  namespace: string;
}): Store {
  const local = new LocalStore(false, false, options.keys);
  return options.redis ? sharedOrLocal(options.redis, local, options.namespace) : local;
}

/**
 * Counts one request against `key`, with the RateLimit-* headers; past `max`, 429 rate_limited with
 * Retry-After and the message `refusal` words.
 */
export function countRequest(
  store: Store,
  key: string,
  max: number,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
  refusal: (max: number, seconds: string) => string,
): void {
  store.incr(
    key,
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
      done(new HttpError("rate_limited", refusal(max, seconds)));
    },
    WINDOW_MS,
    max,
  );
}

/**
 * Counts in Redis while the link is up, in this process while it is down or late: Redis being
 * away never refuses or fails a request, it only makes the limit per replica.
 */
function sharedOrLocal(link: RedisLink, local: Store, namespace: string): Store {
  const shared = new RedisStore(false, false, link.client, namespace);
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
