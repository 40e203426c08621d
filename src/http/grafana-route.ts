// GET …/<name>/grafana: the endpoint's Grafana dashboard for the caller's credential, leaving out
// what its scope fixes (docs/grafana.md); a kind of route (route-kinds.ts).
import type { MediaFormat } from "./formats/format.ts";
import { endpointDashboard } from "./grafana-dashboard.ts";
import type { KindHandler, RouteKind } from "./route-kind.ts";

/** The dashboard of the endpoint a path names; the scope judges the endpoint alone. */
export const grafanaHandler =
  (kind: RouteKind<MediaFormat>): KindHandler =>
  ({ requests }) =>
  async (request, reply) => {
    // With no parameters of the endpoint's, the query the scope grants is what it fixes.
    const { endpoint, query, format } = requests.enter(kind, request, reply);
    return reply
      .type(format.contentType)
      .send(JSON.stringify(endpointDashboard({ endpoint, fixed: query })));
  };
