// Prometheus metrics at GET /metrics (behind a full-access credential, or on the management
// listener): requests by endpoint and status, the result cache's counters, the engine's queries,
// the engine gate's, the connections', whether Redis is shared and LOCAL_DATA's watermark.
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { AlertCounts, Alerts } from "../alerts/alerts.ts";
import type { CacheStats, ResultCache } from "../cache/result-cache.ts";
import { hasFullAccess } from "../credentials/scope-rule.ts";
import type { Catalog } from "../endpoints/catalog.ts";
import type { FollowHub } from "../endpoints/follow.ts";
import type { AdmittedEngine } from "../engines/admission.ts";
import type { QueryRequest } from "../engines/engine.ts";
import type { RedisLink } from "../redis/link.ts";
import type { ReloadCounts } from "../settings-reload.ts";
import type { EngineUsage } from "../telemetry/observed-engine.ts";
import type { ConnectionStats } from "./connection-cap.ts";
import { DurationHistogram } from "./duration-histogram.ts";
import { CLIENT_LEFT, HttpError } from "./errors.ts";
import { METRICS_SCHEMA } from "./openapi/service-schemas.ts";
import type { WatchStats } from "./route-kind.ts";
import type { StreamEnds } from "./streams/outbound-stream.ts";

const CACHE_COUNTS: Record<Exclude<keyof CacheStats, "entries" | "bytes">, string> = {
  hits: "answers from memory",
  misses: "answers that waited for the engine",
  stale: "answers from memory past the warming interval",
  refreshes: "background refreshes started",
  refreshFailures: "background refreshes that failed (the previous value kept being served)",
  warmingsSkipped:
    "warming ticks that refreshed nothing: a key requested only once in its TTL, or past CACHE_MAX_WARM_KEYS",
  forcedRefreshes: "recomputations callers asked for (Cache-Control: no-cache or max-age)",
  forcedRefreshesRefused:
    "recomputations callers asked for past their CACHE_FORCED_REFRESH_PER_MINUTE (the held value served)",
};

interface MetricSources {
  catalog: Catalog;
  cache?: ResultCache;
  engine: AdmittedEngine;
  /** What the engine did, by endpoint, trigger and credential. */
  usage: () => Iterable<EngineUsage>;
  connections: ConnectionStats;
  follow: FollowHub;
  streamEnds: StreamEnds;
  watches: WatchStats;
  alerts?: Alerts;
  /** Reloads of the settings (SIGHUP, a file changed), by part and outcome. */
  reloads?: ReloadCounts;
  redis?: RedisLink;
  /** The engine's QueryEngine.loadedThrough, when its data is loaded from files (LOCAL_DATA). */
  loadedThrough?: () => bigint | undefined;
}

/** The service's registry: process, cache, engine, connection, follow and Redis figures, read when scraped. */
export function serviceRegistry(sources: MetricSources): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named as counters, which Prometheus's linter (promtool check metrics) refuses; each is
  // the sum of the gauge of the same name without _total, by type.
  for (const total of ["handles", "requests", "resources"]) {
    registry.removeSingleMetric(`nodejs_active_${total}_total`);
  }
  if (sources.cache) registerCacheMetrics(registry, sources.cache);
  registerEngineMetrics(registry, sources.catalog, sources.usage);
  registerEngineUsageMetrics(registry, sources.usage);
  registerAdmissionMetrics(registry, sources.engine);
  registerConnectionMetrics(registry, sources.connections);
  registerFollowMetrics(registry, sources.follow);
  registerWatchMetrics(registry, sources.watches);
  if (sources.alerts) registerAlertMetrics(registry, sources.alerts);
  new Counter({
    name: "query_service_stream_ends_total",
    help: "Streams the service ended, by reason (shutting_down, token_expired, revoked, too_slow, error, settled, endpoint_removed, endpoint_changed); a client leaving is not counted.",
    labelNames: ["reason"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, count] of sources.streamEnds) this.inc({ reason }, count);
    },
  });
  if (sources.reloads) {
    twoLabelCounter(registry, sources.reloads, {
      name: "query_service_reloads_total",
      help: "Reloads of the settings (SIGHUP, a settings file changed), by part (endpoints, keys, rules) and outcome (applied; refused: the part, or an entry of it, was refused and logged naming its file).",
      labelNames: ["part", "outcome"],
    });
  }
  if (sources.redis) registerRedisMetrics(registry, sources.redis);
  if (sources.loadedThrough) registerWatermarkMetric(registry, sources.loadedThrough);
  return registry;
}

function registerWatermarkMetric(
  registry: Registry,
  loadedThrough: () => bigint | undefined,
): void {
  new Gauge({
    name: "query_service_data_watermark_seconds",
    help: "LOCAL_DATA's watermark, Unix seconds: every export file that had arrived by then is loaded, and settled runs end a lag before it (0 while a file there at startup is still to load).",
    registers: [registry],
    collect() {
      this.set(Number(loadedThrough() ?? 0n) / 1e6);
    },
  });
}

/** A counter that reads, when scraped, counts kept by its first label and then its second. */
function twoLabelCounter(
  registry: Registry,
  counts: ReadonlyMap<string, ReadonlyMap<string | number, number>>,
  metric: { name: string; help: string; labelNames: [string, string] },
): void {
  const [first, second] = metric.labelNames;
  new Counter({
    ...metric,
    registers: [registry],
    collect() {
      this.reset();
      for (const [outer, byInner] of counts) {
        for (const [inner, count] of byInner) this.inc({ [first]: outer, [second]: inner }, count);
      }
    },
  });
}

/** Counts the requests of the enclosing scope into `registry`, and serves it to full-access callers. */
export const metrics = fp(
  async (app: FastifyInstance, { catalog, registry }: { catalog: Catalog; registry: Registry }) => {
    // Counted here, by endpoint then status, and handed to prom-client when scraped: inc() with
    // labels hashes them every time.
    const answered = new Map<string, Map<number, number>>();
    twoLabelCounter(registry, answered, {
      name: "query_service_requests_total",
      help: "Endpoint requests answered, by endpoint (unknown: no such endpoint) and HTTP status (499: the client left first).",
      labelNames: ["endpoint", "status"],
    });
    const duration = new DurationHistogram({
      name: "query_service_request_duration_seconds",
      help: "Time to answer an endpoint request, by endpoint.",
      buckets: [0.0005, 0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 30],
      registers: [registry],
    });

    // Every answer of an endpoint route counts, refusals (401, 429) and unknown names (404) included.
    // Only catalog names become label values: a caller cannot grow the series by inventing names.
    /** The request's endpoint, counted once more under `status`; undefined off endpoint routes. */
    const count = (request: FastifyRequest, status: number): string | undefined => {
      const { nameOrId } = request.params as { nameOrId?: string };
      if (nameOrId === undefined) return undefined;
      const endpoint = request.queryLog.endpoint ?? catalog.find(nameOrId)?.name ?? "unknown";
      let byStatus = answered.get(endpoint);
      if (byStatus === undefined) {
        byStatus = new Map();
        answered.set(endpoint, byStatus);
      }
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      return endpoint;
    };
    // Callback-style: an async hook costs a promise and a microtask turn per request.
    app.addHook("onResponse", (request, reply, done) => {
      const endpoint = count(request, reply.statusCode);
      if (endpoint !== undefined) duration.observe(endpoint, reply.elapsedTime / 1000);
      done();
    });
    // A client that left before its answer gets no response, so no onResponse: counted as 499, untimed.
    app.addHook("onRequestAbort", (request, done) => {
      count(request, CLIENT_LEFT);
      done();
    });

    // A scraper reads this every few seconds with a key that may also query: not from the same budget.
    app.get(
      "/metrics",
      { config: { rateLimit: false }, schema: METRICS_SCHEMA },
      async (request, reply) => {
        // Counts across every endpoint and tenant: for credentials that may read every one of them.
        if (!hasFullAccess(request.credential)) {
          throw new HttpError(
            "forbidden",
            "Reading /metrics needs a credential with a * scope that fixes no parameter.",
          );
        }
        return reply.type(registry.contentType).send(await registry.metrics());
      },
    );
  },
);

function registerCacheMetrics(registry: Registry, cache: ResultCache): void {
  new Gauge({
    name: "query_service_cache_watched_keys",
    help: "Result cache keys watched now (by watch streams and alert rules), each kept warm as a poller would keep it.",
    registers: [registry],
    collect() {
      this.set(cache.watchedKeys);
    },
  });
  for (const [stat, help] of Object.entries(CACHE_COUNTS)) {
    const name = `query_service_cache_${stat.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}_total`;
    new Counter({
      name,
      help: `Result cache: ${help}.`,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.stats()[stat as keyof typeof CACHE_COUNTS]);
      },
    });
  }
  for (const [stat, help] of [
    ["entries", "entries held"],
    ["bytes", "bytes held"],
  ] as const) {
    new Gauge({
      name: `query_service_cache_${stat}`,
      help: `Result cache: ${help}.`,
      registers: [registry],
      collect() {
        this.set(cache.stats()[stat]);
      },
    });
  }
}

/** Every cause of engine work; an endpoint that cannot be followed has no follow or export work. */
const TRIGGERS: readonly NonNullable<QueryRequest["trigger"]>[] = [
  "request",
  "warming",
  "follow",
  "export",
];
const UNFOLLOWED_TRIGGERS = TRIGGERS.slice(0, 2);

function registerEngineMetrics(
  registry: Registry,
  catalog: Catalog,
  usage: () => Iterable<EngineUsage>,
): void {
  new Counter({
    name: "query_service_engine_queries_total",
    help: "Queries run on the engine (on BigQuery, jobs: reading a kept result's pages runs none), by endpoint and trigger (request: a caller waited for it; warming: the cache's refresh; follow: follow streams' polls and catch-ups; export: settled runs).",
    labelNames: ["endpoint", "trigger"] as const,
    registers: [registry],
    collect() {
      this.reset();
      // Every series from the start, so a sum over replicas counts those that ran nothing yet.
      for (const { name, paging } of catalog.entries) {
        for (const trigger of paging?.follow ? TRIGGERS : UNFOLLOWED_TRIGGERS) {
          this.inc({ endpoint: name, trigger }, 0);
        }
      }
      for (const { endpoint, trigger, queries } of usage())
        this.inc({ endpoint, trigger }, queries);
    },
  });
}

function registerRedisMetrics(registry: Registry, redis: RedisLink): void {
  new Gauge({
    name: "query_service_redis_up",
    help: "1 while the replicas share the cache and rate limits through Redis (REDIS_URL); 0 while this replica works alone.",
    registers: [registry],
    collect() {
      this.set(redis.up ? 1 : 0);
    },
  });
}

function registerAdmissionMetrics(registry: Registry, engine: AdmittedEngine): void {
  new Gauge({
    name: "query_service_engine_running",
    help: "Engine queries running now.",
    registers: [registry],
    collect() {
      this.set(engine.stats().running);
    },
  });
  new Gauge({
    name: "query_service_engine_queued",
    help: "Engine queries waiting for a slot now.",
    registers: [registry],
    collect() {
      this.set(engine.stats().queued);
    },
  });
  new Counter({
    name: "query_service_engine_refused_total",
    help: "Engine queries refused by the admission gate, by reason (expired: deadline passed while queued).",
    labelNames: ["reason"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, count] of Object.entries(engine.stats().refused)) {
        this.inc({ reason }, count);
      }
    },
  });
}

function registerConnectionMetrics(registry: Registry, connections: ConnectionStats): void {
  new Gauge({
    name: "query_service_http_connections_open",
    help: "Client connections open now on the main listener.",
    registers: [registry],
    async collect() {
      this.set(await connections.open());
    },
  });
  new Counter({
    name: "query_service_http_connections_refused_total",
    help: "Client connections closed at once because HTTP_MAX_CONNECTIONS were open.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(connections.refused);
    },
  });
}

function registerWatchMetrics(registry: Registry, watches: WatchStats): void {
  new Gauge({
    name: "query_service_watch_streams_open",
    help: "Watch streams open now.",
    registers: [registry],
    collect() {
      this.set(watches.open);
    },
  });
  new Counter({
    name: "query_service_watch_events_sent_total",
    help: "Values sent to watch streams (event: result), the first answer of each included.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(watches.eventsSent);
    },
  });
}

const ALERT_COUNTS: Record<keyof AlertCounts, [name: string, help: string]> = {
  evaluations: [
    "evaluations",
    "Alert rule evaluations (one per value stored or feed poll), by rule.",
  ],
  firings: ["firings", "Alert rules that started firing, by rule (once across replicas)."],
  deliveries: ["deliveries", "Webhook deliveries a receiver took (2xx), by rule."],
  deliveryFailures: [
    "delivery_failures",
    "Webhook delivery attempts that failed (an error status, no answer in time, unreachable), by rule.",
  ],
};

function registerAlertMetrics(registry: Registry, alerts: Alerts): void {
  for (const [count, [name, help]] of Object.entries(ALERT_COUNTS)) {
    new Counter({
      name: `query_service_alert_${name}_total`,
      help,
      labelNames: ["rule"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [rule, counts] of alerts.counts()) {
          this.inc({ rule }, counts[count as keyof AlertCounts]);
        }
      },
    });
  }
}

function registerFollowMetrics(registry: Registry, follow: FollowHub): void {
  for (const [stat, name, help] of [
    ["open", "streams_open", "Follow streams open now."],
    ["feeds", "feeds", "Follow feeds polling now: one per parameter set, shared by its streams."],
  ] as const) {
    new Gauge({
      name: `query_service_follow_${name}`,
      help,
      registers: [registry],
      collect() {
        this.set(follow.stats()[stat]);
      },
    });
  }
  for (const [stat, name, help] of [
    ["polls", "polls", "Polls of the engine by follow feeds (one per parameter set and interval)."],
    ["recordsSent", "records_sent", "Records written to open follow streams."],
  ] as const) {
    new Counter({
      name: `query_service_follow_${name}_total`,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(follow.stats()[stat]);
      },
    });
  }
}

const ENGINE_USAGE: [keyof EngineUsage, string, string][] = [
  ["bytesProcessed", "bytes_processed", "Bytes the engine processed (BigQuery's billing basis)"],
  ["seconds", "seconds", "Seconds engine queries took, waiting for a slot excluded"],
];

function registerEngineUsageMetrics(registry: Registry, usage: () => Iterable<EngineUsage>): void {
  for (const [stat, name, help] of ENGINE_USAGE) {
    new Counter({
      name: `query_service_engine_${name}_total`,
      help: `${help}, by endpoint, trigger (request, warming, follow, export) and credential (none for work nobody asked for; at most METRICS_MAX_CREDENTIALS, the rest as other).`,
      labelNames: ["endpoint", "trigger", "credential"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const row of usage()) {
          this.inc(
            { endpoint: row.endpoint, trigger: row.trigger, credential: row.credential },
            row[stat] as number,
          );
        }
      },
    });
  }
}
