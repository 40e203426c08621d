// GET /api/grafana: one Grafana dashboard with a panel for each endpoint the caller's credential may
// call, each leaving out what its scope fixes (docs/grafana.md).
import type { FastifyInstance } from "fastify";
import { callableBy } from "../credentials/scope-rule.ts";
import type { Catalog } from "../endpoints/catalog.ts";
import { LISTING } from "./endpoint-request.ts";
import { catalogDashboard } from "./grafana-dashboard.ts";
import { GRAFANA_SCHEMA } from "./openapi/service-schemas.ts";
import type { EndpointRequests } from "./route-kind.ts";

export async function catalogDashboardRoute(
  app: FastifyInstance,
  { catalog, requests }: { catalog: Catalog; requests: EndpointRequests },
) {
  app.get("/api/grafana", { schema: GRAFANA_SCHEMA }, async (request, reply) => {
    const format = requests.list(LISTING, request, reply);
    const charted = callableBy(request.credential, catalog.entries);
    return reply.type(format.contentType).send(JSON.stringify(catalogDashboard(charted)));
  });
}
