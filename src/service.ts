// The long-lived parts of the service, built once whatever serves them over HTTP: the engine behind
// its admission, the result cache and the replicas' shared results, the page cursors, the runner,
// the follow hub and the alerts. No HTTP here: app.ts builds the routes over these.
import { randomBytes } from "node:crypto";
import { AlertStates } from "./alerts/alert-states.ts";
import { type AlertLog, Alerts } from "./alerts/alerts.ts";
import type { AlertRulesFile } from "./alerts/rules-source.ts";
import type { DeliveryOptions } from "./alerts/webhooks.ts";
import { servesKey } from "./cache/cache-key.ts";
import { RefreshBudget } from "./cache/refresh-budget.ts";
import { ResultCache } from "./cache/result-cache.ts";
import { isSerializedResult, serializeResult } from "./cache/serialized-result.ts";
import { SharedResults } from "./cache/shared-results.ts";
import type { Config } from "./config.ts";
import { type Catalog, LiveCatalog } from "./endpoints/catalog.ts";
import { type CursorCodec, cursorCodec } from "./endpoints/cursor.ts";
import { FollowHub, type FollowOptions } from "./endpoints/follow.ts";
import { loadCatalog } from "./endpoints/load-catalog.ts";
import { createRunner, type RunEndpoint, type WatchEndpoint } from "./endpoints/runner.ts";
import { type AdmittedEngine, admit } from "./engines/admission.ts";
import type { QueryEngine } from "./engines/engine.ts";
import type { RedisLink } from "./redis/link.ts";
import { SharedBudgets } from "./redis/shared-budgets.ts";
import { type ObservedEngine, observeEngine } from "./telemetry/observed-engine.ts";

/** What the long-lived parts are built from besides the settings. */
export interface ServiceDeps {
  engine: QueryEngine;
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
  /** Follow streams' clock and window size, for tests. */
  follow?: Pick<FollowOptions, "clock" | "windowPageRows">;
  /** Alert rules (ALERT_RULES_FILE), run while the service is, and again as the file changes. */
  alertRules?: AlertRulesFile;
  /** Webhook attempts, backoff, timeout and lease; default 6 attempts, 1 s doubling, 10 s each, 30 s. */
  alertDelivery?: Partial<DeliveryOptions>;
}

export interface Service {
  /** The engine as the service was given it: its health and what its files have loaded. */
  source: QueryEngine;
  /** The engine observed (usage per endpoint, trigger, credential) and behind its admission. */
  engine: AdmittedEngine;
  usage: ObservedEngine["usage"];
  catalog: Catalog;
  cache?: ResultCache;
  /** Per-credential limits counted once across replicas, while Redis answers. */
  budgets?: SharedBudgets;
  /** The link to Redis the replicas share (REDIS_URL), for the app's limits too; its owner closes it. */
  redis?: RedisLink;
  cursors: CursorCodec;
  run: RunEndpoint;
  watch: WatchEndpoint;
  followHub: FollowHub;
  /** The follow settings in force: the config's, with the test's clock and window. */
  follow: Config["follow"] & ServiceDeps["follow"];
  refreshBudget: RefreshBudget;
  alerts?: Alerts;
  /** From when the service is ready: the alert rules of the file, following it. */
  start(): void;
  /** Before closing: the alerts and the follow hub's polls stop, each stream's source with them. */
  stop(): void;
  close(): Promise<void>;
}

const DEFAULT_DELIVERY: DeliveryOptions = {
  attempts: 6,
  firstRetryMs: 1_000,
  timeoutMs: 10_000,
  leaseMs: 30_000,
};

/** The long-lived parts of the service of `config` over `deps`, reporting to `log`. */
export function createService(config: Config, deps: ServiceDeps, log: AlertLog): Service {
  const budgets = deps.redis && new SharedBudgets(deps.redis);
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
      logger: log,
    });
  const cache =
    deps.cache && new ResultCache({ logger: log, shared, ...config.cache, ...deps.cache });
  const catalog = deps.catalog ?? loadCatalog();
  // Values of an endpoint a reload removed or changed are dropped, their warming with them.
  const stopRetaining =
    cache && catalog instanceof LiveCatalog
      ? catalog.onReplace((next) => cache.retain((key) => servesKey(next, key)))
      : () => {};
  // Without one (an app a test builds), this instance's cursors are good in this instance only.
  const cursors = cursorCodec(config.cursorSecret ?? randomBytes(32), deps.deployment);
  const { run, watch } = createRunner({ engine, cache, serialize: serializeResult, log, cursors });
  const follow = { ...config.follow, ...deps.follow };
  const followHub = new FollowHub(engine, {
    ...follow,
    log,
    cursors,
    heldBy: (credential) => engine.held(credential),
  });

  const delivery = { ...DEFAULT_DELIVERY, ...deps.alertDelivery };
  const alerts =
    deps.alertRules &&
    new Alerts({
      watch,
      hub: followHub,
      states: new AlertStates(deps.redis, delivery.leaseMs),
      delivery,
      log,
    });
  let unfollowRules = () => {};
  return {
    source: deps.engine,
    engine,
    usage: observed.usage,
    catalog,
    cache,
    budgets,
    redis: deps.redis,
    cursors,
    run,
    watch,
    followHub,
    follow,
    refreshBudget: new RefreshBudget(config.forcedRefreshPerMinute, budgets),
    alerts,
    start() {
      const rules = deps.alertRules;
      if (!alerts || !rules) return;
      alerts.apply(rules.value);
      unfollowRules = rules.onChange(() => alerts.apply(rules.value));
    },
    stop() {
      unfollowRules();
      alerts?.close();
      // The follow streams' polls stop; the streams themselves end with the app's connections.
      followHub.close();
    },
    async close() {
      stopRetaining();
      await cache?.close();
      await budgets?.close();
    },
  };
}
