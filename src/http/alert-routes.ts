// GET /api/alerts: the alert rules the caller may see (those whose endpoint and parameters its
// credential may call) and the state of each.
import type { FastifyInstance } from "fastify";
import type { Alerts } from "../alerts/alerts.ts";
import { NO_PARAMS, parseParams } from "../endpoints/params.ts";
import { ALERTS_SCHEMA } from "./openapi/service-schemas.ts";

export async function alertRoutes(app: FastifyInstance, { alerts }: { alerts?: Alerts }) {
  app.get("/api/alerts", { schema: ALERTS_SCHEMA }, async (request, reply) => {
    parseParams(NO_PARAMS, request.query);
    const result = alerts ? await alerts.list(request.credential) : [];
    return reply.type("application/json; charset=utf-8").send(JSON.stringify({ result }));
  });
}
