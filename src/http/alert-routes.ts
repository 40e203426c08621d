// GET /api/alerts: the alert rules the caller may see (those whose endpoint and parameters its
// credential may call) and the state of each; with `endpoint`, only that endpoint's, let in as any
// request of it is (unknown 404, out of scope 403).
import type { FastifyInstance } from "fastify";
import type { Alerts } from "../alerts/alerts.ts";
import type { RawQuery } from "../credentials/scope-rule.ts";
import { optionalText, paramsOf } from "../endpoints/params.ts";
import { LISTING } from "./endpoint-request.ts";
import { ALERTS_SCHEMA } from "./openapi/service-schemas.ts";
import type { EndpointRequests } from "./route-kind.ts";

const ALERTS_LISTING = {
  ...LISTING,
  params: paramsOf({
    endpoint: optionalText("only the rules of this endpoint: its name or id"),
  }),
};

export async function alertRoutes(
  app: FastifyInstance,
  { alerts, requests }: { alerts?: Alerts; requests: EndpointRequests },
) {
  app.get("/api/alerts", { schema: ALERTS_SCHEMA }, async (request, reply) => {
    const { endpoint: named } = request.query as RawQuery;
    const entered =
      typeof named === "string" && named !== ""
        ? requests.enter(ALERTS_LISTING, request, reply, { nameOrId: named })
        : undefined;
    const format = entered?.format ?? requests.list(ALERTS_LISTING, request, reply);
    const result = alerts ? await alerts.list(request.credential, entered?.endpoint) : [];
    return reply.type(format.contentType).send(JSON.stringify({ result }));
  });
}
