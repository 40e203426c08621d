// The HTTP service: plugins and routes over an injected engine. Data flows one way:
// route → credential/scope → params → cache → engine → rows → JSON.
import { randomBytes } from "node:crypto";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type { Registry } from "prom-client";
import { AlertStates } from "./alerts/alert-states.ts";
import { Alerts } from "./alerts/alerts.ts";
import type { AlertRulesFile } from "./alerts/rules-source.ts";
import type { DeliveryOptions } from "./alerts/webhooks.ts";
import { servesKey } from "./cache/cache-key.ts";
import { RefreshBudget } from "./cache/refresh-budget.ts";
import { ResultCache } from "./cache/result-cache.ts";
import { SharedResults } from "./cache/shared-results.ts";
import type { Config } from "./config.ts";
import { createAuthenticator } from "./credentials/authenticate.ts";
import type { KeysFile } from "./credentials/keys-file.ts";
import type { TokenVerifier } from "./credentials/tokens.ts";
import { type Catalog, LiveCatalog } from "./endpoints/catalog.ts";
import { cursorCodec } from "./endpoints/cursor.ts";
import { FollowHub, type FollowOptions } from "./endpoints/follow.ts";
import { loadCatalog } from "./endpoints/load-catalog.ts";
import { createRunner } from "./endpoints/runner.ts";
import { admit } from "./engines/admission.ts";
import type { QueryEngine } from "./engines/engine.ts";
import { alertRoutes } from "./http/alert-routes.ts";
import { anonymousLimit } from "./http/anonymous-limit.ts";
import { requireCredential } from "./http/auth.ts";
import { connectionCap } from "./http/connection-cap.ts";
import { openCors } from "./http/cors.ts";
import { endpointRequests } from "./http/endpoint-request.ts";
import { endpointRoutes } from "./http/endpoint-routes.ts";
import { clientError, errorEnvelope, frameworkError, newRequestId } from "./http/errors.ts";
import { explorerPage } from "./http/explorer/routes.ts";
import { followRoutes } from "./http/follow-routes.ts";
import { isSerializedResult, serializeResult } from "./http/formats/json.ts";
import { healthRoutes } from "./http/health-routes.ts";
import { loadShedding, type PressureLimits } from "./http/load-shedding.ts";
import { methodNotAllowed } from "./http/methods.ts";
import { metrics, serviceRegistry } from "./http/metrics.ts";
import { describedRoutes } from "./http/openapi/described-routes.ts";
import { apiReference, openApiGeneration, openApiRoute } from "./http/openapi/routes.ts";
import { parseQueryString, refuseBadlyEncodedQuery } from "./http/query-string.ts";
import { perKeyRateLimit } from "./http/rate-limit.ts";
import { requestLog } from "./http/request-log.ts";
import { requestShape } from "./http/request-shape.ts";
import { shutdown } from "./http/shutdown.ts";
import type { StreamEnds, StreamLimits } from "./http/streams/outbound-stream.ts";
import { StreamCaps } from "./http/streams/stream-caps.ts";
import { streamPlaces } from "./http/streams/stream-places.ts";
import { type WatchStats, watchRoutes } from "./http/watch-routes.ts";
import type { RedisLink } from "./redis/link.ts";
import { SharedBudgets } from "./redis/shared-budgets.ts";
import type { ReloadCounts } from "./settings-reload.ts";
import { observeEngine } from "./telemetry/observed-engine.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** What /metrics serves, for the management listener to serve too. */
    metricsRegistry: Registry;
  }
}

/**
 * What the service is built from besides its settings: the engine, the files and connections main.ts
 * opened from them, and the clocks and knobs tests set.
 */
export interface AppDeps {
  engine: QueryEngine;
  /** Named, scoped keys (API_KEYS_FILE). */
  keysFile?: KeysFile;
  /** Signed access tokens (JWT_SECRET, JWT_PUBLIC_KEYS_FILE). */
  tokens?: TokenVerifier;
  /**
   * Results are cached, within the config's bounds, on this clock in ms (default Date.now); absent,
   * every request queries (tests that count queries).
   */
  cache?: { now?: () => number };
  /** Shares the cache and the rate limit with other replicas (REDIS_URL); its owner closes it. */
  redis?: RedisLink;
  /** Names the data the engine serves: replicas share cached values only when theirs agree. */
  dataIdentity?: string;
  /**
   * Where the engine's data lives (BigQuery: project and dataset): a page cursor reads a kept
   * result only in a service of the same deployment. Default: the empty name.
   */
  deployment?: string;
  /** The endpoints served; default: the built-in ones (endpoints/). */
  catalog?: Catalog;
  /** Shed load past these limits (main.ts: always); absent: never (tests with fake timers). */
  pressure?: PressureLimits;
  /** Follow streams' clock and window size, for tests. */
  follow?: Pick<FollowOptions, "clock" | "windowPageRows">;
  /** Buffering and timing of streams; default below. */
  streams?: Partial<StreamLimits>;
  /** Alert rules (ALERT_RULES_FILE), run while the service is, and again as the file changes. */
  alertRules?: AlertRulesFile;
  /** Reloads of the settings by part and outcome (main.ts's SettingsReload), for /metrics. */
  reloads?: ReloadCounts;
  /** Webhook attempts, backoff, timeout and lease; default 6 attempts, 1 s doubling, 10 s each, 30 s. */
  alertDelivery?: Partial<DeliveryOptions>;
  /** Absent: no logging (tests). */
  logger?: FastifyBaseLogger;
}

const DEFAULT_STREAM_LIMITS: StreamLimits = {
  // Several windows of a catch-up's records: a client that reads keeps far below it.
  maxUnsentBytes: 4 * 1024 * 1024,
  endGraceMs: 5_000,
  heartbeatMs: 15_000,
};
const DEFAULT_DELIVERY: DeliveryOptions = {
  attempts: 6,
  firstRetryMs: 1_000,
  timeoutMs: 10_000,
  leaseMs: 30_000,
};

const REQUEST_ID = /^[\w.-]{1,64}$/;

/** The service of `config` (every setting, see config.ts) over `deps`. */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const authenticate = createAuthenticator({
    apiKeys: config.auth.apiKeys,
    keysFile: deps.keysFile,
    tokens: deps.tokens,
  });
  const timeouts = config.http;
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
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

  // Every per-credential limit is counted once across replicas while Redis answers.
  const budgets = deps.redis && new SharedBudgets(deps.redis);
  app.addHook("onClose", async () => budgets?.close());
  const limits = config.admission;
  const observed = observeEngine(deps.engine);
  const engine = admit(observed, {
    maxPerCredential: Math.ceil((limits.maxConcurrency + limits.maxQueue) / 2),
    ...limits,
    shared: budgets?.places("engine-share"),
  });

  // A replica waits for another's query at most as long as for its own.
  const shared =
    deps.redis &&
    new SharedResults(deps.redis, {
      waitMs: limits.timeoutMs,
      dataIdentity: deps.dataIdentity,
      isPayload: isSerializedResult,
      now: deps.cache?.now,
      logger: app.log,
    });
  const cache =
    deps.cache && new ResultCache({ logger: app.log, shared, ...config.cache, ...deps.cache });
  app.addHook("onClose", async () => cache?.close());
  const catalog = deps.catalog ?? loadCatalog();
  if (cache && catalog instanceof LiveCatalog) {
    // Values of an endpoint a reload removed or changed are dropped, their warming with them.
    const stop = catalog.onReplace((next) => cache.retain((key) => servesKey(next, key)));
    app.addHook("onClose", async () => stop());
  }
  // Without one (an app a test builds), this instance's cursors are good in this instance only.
  const cursors = cursorCodec(config.cursorSecret ?? randomBytes(32), deps.deployment);
  const { run, watch } = createRunner({
    engine,
    cache,
    serialize: serializeResult,
    log: app.log,
    cursors,
  });
  const follow = { ...config.follow, ...deps.follow };
  const followHub = new FollowHub(engine, {
    ...follow,
    log: app.log,
    cursors,
    heldBy: (credential) => engine.held(credential),
  });

  const delivery = { ...DEFAULT_DELIVERY, ...deps.alertDelivery };
  const alerts =
    deps.alertRules &&
    runAlerts(app, deps.alertRules, {
      watch,
      hub: followHub,
      states: new AlertStates(deps.redis, delivery.leaseMs),
      delivery,
      log: app.log,
    });

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
    usage: observed.usage,
    connections: app.connections,
    follow: followHub,
    streamEnds,
    watches: watchStats,
    alerts,
    reloads: deps.reloads,
    redis: deps.redis,
  });
  app.decorate("metricsRegistry", registry);
  await app.register(errorEnvelope);
  await app.register(methodNotAllowed);
  await app.register(describedRoutes);
  await app.register(openApiGeneration, { catalog });
  await app.register(requestLog);
  if (deps.pressure) await app.register(loadShedding, deps.pressure);
  await app.register(requestShape);
  await app.register(shutdown, { engine, graceMs: config.shutdownGraceMs });
  await app.register(openCors);
  await app.register(refuseBadlyEncodedQuery);
  await app.register(healthRoutes, { engine: deps.engine });
  const limit = anonymousLimit({
    perMinute: config.anonymousRateLimitPerMinute,
    redis: deps.redis,
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
      credentials: config.auth.apiKeys.length + (deps.keysFile?.size ?? 0),
      redis: deps.redis,
    });
    await api.register(metrics, { catalog, registry });
    // One way in for every route that names an endpoint, and one clock for where streams start
    // and where `since` windows do.
    const requests = endpointRequests({ catalog, cursors, now: () => followHub.now() });
    await api.register(endpointRoutes, {
      catalog,
      run,
      refreshBudget: new RefreshBudget(config.forcedRefreshPerMinute, budgets),
      requests,
    });
    // One set of caps for every stream kind: a credential's follows and watches share its budget.
    const reserve = streamPlaces(api, {
      caps: streamCaps,
      limits: { ...DEFAULT_STREAM_LIMITS, ...deps.streams },
      ends: streamEnds,
      keysFile: deps.keysFile,
      catalog,
    });
    await api.register(followRoutes, {
      hub: followHub,
      requests,
      reserve,
      loadedThrough: deps.engine.loadedThrough?.bind(deps.engine),
    });
    if (cache) {
      await api.register(watchRoutes, { run, watch, requests, reserve, stats: watchStats });
    }
    await api.register(alertRoutes, { alerts, requests });
    await api.register(openApiRoute, { limit });
  });
  return app;
}

/** The rules of the file at work from when the service is ready until it closes, following the file. */
function runAlerts(
  app: FastifyInstance,
  rules: AlertRulesFile,
  deps: ConstructorParameters<typeof Alerts>[0],
): Alerts {
  const alerts = new Alerts(deps);
  let unsubscribe = () => {};
  app.addHook("onReady", async () => {
    alerts.apply(rules.value);
    unsubscribe = rules.onChange(() => alerts.apply(rules.value));
  });
  app.addHook("preClose", (done) => {
    unsubscribe();
    alerts.close();
    done();
  });
  return alerts;
}
