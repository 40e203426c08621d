// The HTTP app: plugins and routes over the service's long-lived parts (service.ts). Data flows
// one way: route → credential/scope → params → cache → engine → rows → JSON.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { pino } from "pino";
import type { Registry } from "prom-client";
import type { Config } from "./config.ts";
import { createAuthenticator } from "./credentials/authenticate.ts";
import type { KeysFile } from "./credentials/keys-file.ts";
import type { TokenVerifier } from "./credentials/tokens.ts";
import { alertRoutes } from "./http/alert-routes.ts";
import { anonymousLimit } from "./http/anonymous-limit.ts";
import { requireCredential } from "./http/auth.ts";
import { connectionCap } from "./http/connection-cap.ts";
import { openCors } from "./http/cors.ts";
import { endpointRequests } from "./http/endpoint-request.ts";
import { clientError, errorEnvelope, frameworkError, newRequestId } from "./http/errors.ts";
import { explorerPage } from "./http/explorer/routes.ts";
import { catalogDashboardRoute } from "./http/grafana-catalog-route.ts";
import { healthRoutes } from "./http/health-routes.ts";
import { catalogListing } from "./http/listing-routes.ts";
import { loadShedding, type PressureLimits } from "./http/load-shedding.ts";
import { methodNotAllowed } from "./http/methods.ts";
import { metrics, serviceRegistry } from "./http/metrics.ts";
import { describedRoutes } from "./http/openapi/described-routes.ts";
import { apiReference, openApiGeneration, openApiRoute } from "./http/openapi/routes.ts";
import { parseQueryString, refuseBadlyEncodedQuery } from "./http/query-string.ts";
import { perKeyRateLimit } from "./http/rate-limit.ts";
import { requestLog } from "./http/request-log.ts";
import { requestShape } from "./http/request-shape.ts";
import type { WatchStats } from "./http/route-kind.ts";
import { registerKinds } from "./http/route-kinds.ts";
import { shutdown } from "./http/shutdown.ts";
import type { StreamEnds, StreamLimits } from "./http/streams/outbound-stream.ts";
import { StreamCaps } from "./http/streams/stream-caps.ts";
import { streamPlaces } from "./http/streams/stream-places.ts";
import { createService, type Service, type ServiceDeps } from "./service.ts";
import type { ReloadCounts } from "./settings-reload.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** What /metrics serves, for the management listener to serve too. */
    metricsRegistry: Registry;
  }
}

/** What the HTTP app takes besides its service and settings: the credentials, and its own knobs. */
export interface AppOptions {
  /** Named, scoped keys (API_KEYS_FILE). */
  keysFile?: KeysFile;
  /** Signed access tokens (JWT_SECRET, JWT_PUBLIC_KEYS_FILE). */
  tokens?: TokenVerifier;
  /** Shed load past these limits (main.ts: always); absent: never (tests with fake timers). */
  pressure?: PressureLimits;
  /** Buffering and timing of streams; default below. */
  streams?: Partial<StreamLimits>;
  /** Reloads of the settings by part and outcome (main.ts's SettingsReload), for /metrics. */
  reloads?: ReloadCounts;
  /** Absent: no logging (tests). */
  logger?: FastifyBaseLogger;
}

/** What a service and its app are built from besides the settings: a test's or a bench's. */
export type AppDeps = ServiceDeps & AppOptions;

const DEFAULT_STREAM_LIMITS: StreamLimits = {
  // Several windows of a catch-up's records: a client that reads keeps far below it.
  maxUnsentBytes: 4 * 1024 * 1024,
  endGraceMs: 5_000,
  heartbeatMs: 15_000,
};
const REQUEST_ID = /^[\w.-]{1,64}$/;

/** The service of `config` (every setting, see config.ts) over `deps`, and its app over it. */
export const serviceApp = (config: Config, deps: AppDeps): Promise<FastifyInstance> =>
  buildApp(createService(config, deps, deps.logger ?? pino({ enabled: false })), config, deps);

/**
 * The HTTP app of `config` over `service`: its routes for the catalog the service serves, with the
 * credentials and knobs of `options`. The app runs the service: starts it when ready, stops it
 * before closing, closes it last.
 */
export async function buildApp(
  service: Service,
  config: Config,
  options: AppOptions = {},
): Promise<FastifyInstance> {
  const authenticate = createAuthenticator({
    apiKeys: config.auth.apiKeys,
    keysFile: options.keysFile,
    tokens: options.tokens,
  });
  const timeouts = config.http;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    // Fastify's two lines per request give way to our one (http/request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // A caller's X-Request-Id is kept when it is a plain token, so its logs and ours line up.
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : newRequestId();
    },
    // The client address every per-address count uses: the peer's, or the one trusted proxies name.
    trustProxy: config.trustProxy,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    bodyLimit: 1024,
    routerOptions: { maxParamLength: 200, querystringParser: parseQueryString },
    // A HEAD is the GET without its body (http/methods.ts): on an endpoint path it is answered as
    // the GET is, from the cache or by a query under the same admission and rate limit.
    exposeHeadRoutes: true,
    // Closing answers in our envelope (http/shutdown.ts), not Fastify's own 503 body.
    return503OnClosing: false,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    http: {
      headersTimeout: timeouts.headersTimeoutMs,
      // Node checks these timeouts only this often (default 30 s, which would double them).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersTimeoutMs),
    },
  });

  const { engine, cache, catalog, cursors, run, watch, followHub, follow, budgets, alerts } =
    service;
  app.addHook("onReady", async () => service.start());
  app.addHook("preClose", (done) => {
    service.stop();
    done();
  });
  app.addHook("onClose", async () => service.close());

  await app.register(connectionCap, { max: config.http.maxConnections });
  const streamCaps = new StreamCaps({
    maxOpen: config.streams.maxOpen,
    maxPerAddress: config.streams.maxPerAddress,
    maxPerCredential: follow.maxPerCredential,
    shared: budgets && {
      perAddress: budgets.places("streams-per-address"),
      perCredential: budgets.places("follow-streams"),
    },
  });
  const streamEnds: StreamEnds = new Map();
  const watchStats: WatchStats = { open: 0, eventsSent: 0 };
  const registry = serviceRegistry({
    catalog,
    cache,
    engine,
    usage: service.usage,
    connections: app.connections,
    follow: followHub,
    streamEnds,
    watches: watchStats,
    alerts,
    reloads: options.reloads,
    redis: service.redis,
    loadedThrough: service.source.loadedThrough?.bind(service.source),
  });
  app.decorate("metricsRegistry", registry);
  await app.register(errorEnvelope);
  await app.register(methodNotAllowed);
  await app.register(describedRoutes);
  await app.register(openApiGeneration, { catalog });
  await app.register(requestLog);
  if (options.pressure) await app.register(loadShedding, options.pressure);
  await app.register(requestShape);
  await app.register(shutdown, { engine, graceMs: config.shutdownGraceMs });
  await app.register(openCors);
  await app.register(refuseBadlyEncodedQuery);
  await app.register(healthRoutes, { engine: service.source });
  const limit = anonymousLimit({
    perMinute: config.anonymousRateLimitPerMinute,
    redis: service.redis,
  });
  await app.register(apiReference, { limit });
  await app.register(explorerPage, { limit });
  await app.register(async (api) => {
    await api.register(requireCredential, {
      authenticate,
      failuresPerMinute: config.auth.failuresPerMinute,
    });
    await api.register(perKeyRateLimit, {
      perMinute: config.rateLimitPerMinute,
      credentials: config.auth.apiKeys.length + (options.keysFile?.size ?? 0),
      redis: service.redis,
    });
    await api.register(metrics, { catalog, registry });
    // One way in for every route that names an endpoint, and one clock for where streams start
    // and where `since` windows do.
    const requests = endpointRequests({
      catalog,
      cursors,
      now: () => followHub.now(),
      settledLagUs: BigInt(service.follow.lagMs) * 1_000n,
    });
    await api.register(catalogListing, { catalog, requests });
    await api.register(catalogDashboardRoute, { catalog, requests });
    // One set of caps for every stream kind: a credential's follows and watches share its budget.
    const reserve = streamPlaces(api, {
      caps: streamCaps,
      limits: { ...DEFAULT_STREAM_LIMITS, ...options.streams },
      ends: streamEnds,
      keysFile: options.keysFile,
      catalog,
    });
    registerKinds(api, {
      requests,
      run,
      // A service that caches nothing has nothing to watch.
      ...(cache && { watch }),
      refreshBudget: service.refreshBudget,
      hub: followHub,
      reserve,
      watchStats,
      loadedThrough: service.source.loadedThrough?.bind(service.source),
    });
    await api.register(alertRoutes, { alerts, requests });
    await api.register(openApiRoute, { limit });
  });
  return app;
}
