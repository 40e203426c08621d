// The HTTP service: plugins, hooks and routes over an injected engine. Data flows one way:
// route → auth → params → cache → engine → rows → JSON.
import { randomUUID } from "node:crypto";
import cors from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { ResultCache, type ResultCacheOptions } from "./cache/result-cache.ts";
import { catalog } from "./endpoints/catalog.ts";
import { loadQueries } from "./endpoints/queries.ts";
import { createRunner } from "./endpoints/runner.ts";
import type { QueryEngine } from "./engines/engine.ts";
import { requireApiKey } from "./http/auth.ts";
import { endpointRoutes } from "./http/endpoint-routes.ts";
import { registerErrorHandlers } from "./http/errors.ts";
import { healthRoutes } from "./http/health-routes.ts";
import { requestLog } from "./http/request-log.ts";

export interface AppDeps {
  engine: QueryEngine;
  /** Accepted keys; at least one. */
  apiKeys: readonly string[];
  /** Result cache bounds and clock; absent turns caching off. */
  cache?: ResultCacheOptions;
  rateLimitPerMinute?: number;
  /** SQL per endpoint name; default: queries/<dialect>/<name>.sql. */
  queries?: ReadonlyMap<string, string>;
  /** Absent: no logging (tests). */
  logger?: FastifyBaseLogger;
}

const REQUEST_ID = /^[\w.-]{1,64}$/;

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  if (deps.apiKeys.length === 0) throw new Error("buildApp needs at least one API key");
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    // Fastify's two lines per request give way to our one (http/request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // A caller's X-Request-Id is kept when it is a plain token, so its logs and ours line up.
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: 1024,
    routerOptions: { maxParamLength: 200 },
  });

  const cache = deps.cache && new ResultCache({ logger: app.log, ...deps.cache });
  app.addHook("onClose", async () => cache?.close());
  const queries = deps.queries ?? loadQueries(deps.engine.dialect, catalog);
  const run = createRunner({ engine: deps.engine, queries, cache });

  registerErrorHandlers(app);
  requestLog(app);
  await app.register(cors, {
    origin: "*",
    allowedHeaders: ["X-API-KEY", "Authorization", "Content-Type", "If-None-Match", "X-Request-Id"],
    exposedHeaders: ["X-Cache", "Age", "ETag", "X-Result-Truncated", "X-Request-Id"],
  });
  healthRoutes(app, deps.engine);

  await app.register(async (api) => {
    requireApiKey(api, deps.apiKeys);
    await api.register(rateLimit, {
      max: deps.rateLimitPerMinute ?? 600,
      timeWindow: 60_000,
      hook: "preHandler",
      keyGenerator: (request) => `key-${request.apiKeyIndex}`,
      errorResponseBuilder: (_request, context) => ({
        statusCode: 429,
        message: `More than ${context.max} requests a minute with this key; retry in ${context.after}.`,
      }),
    });
    endpointRoutes(api, run);
  });

  return app;
}
