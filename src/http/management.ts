// The management listener (MANAGEMENT_PORT): /health, /ready and /metrics on a port of their own,
// with its own accept queue, so that an orchestrator's probes and a scraper are answered while the
// main listener is saturated. Bind it where only they reach it: it asks for no credential.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type { Registry } from "prom-client";
import type { QueryEngine } from "../engines/engine.ts";
import { errorEnvelope } from "./errors.ts";
import { healthRoutes } from "./health-routes.ts";
import { methodNotAllowed } from "./methods.ts";
import { describedRoutes } from "./openapi/described-routes.ts";

export async function buildManagementApp(deps: {
  engine: QueryEngine;
  registry: Registry;
  logger?: FastifyBaseLogger;
}): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    // Probes every few seconds would flood the log.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024,
  });
  await app.register(errorEnvelope);
  await app.register(methodNotAllowed);
  await app.register(describedRoutes);
  // Every answer, errors included, carries its request id, as on the main listener.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  await app.register(healthRoutes, { engine: deps.engine });
  app.get("/metrics", async (_request, reply) =>
    reply.type(deps.registry.contentType).send(await deps.registry.metrics()),
  );
  return app;
}
