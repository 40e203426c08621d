// Route schemas here describe; Fastify neither validates nor serializes with them. A request to an
// endpoint is checked by the endpoint's own validator (endpoints/params.ts), which names every bad
// parameter in the envelope's 400, and whose JSON Schema (`paramsJsonSchema`) is the query string
// its entry routes declare (route-kinds.ts); bodies are written as JSON.stringify writes them. The
// schemas the routes refer to by `$id` (the error envelopes, the listings' entries, the streams'
// end) are the app's shared schemas, which the document names once each.
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { STREAM_SCHEMAS } from "./entry-schemas.ts";
import { ERROR_SCHEMAS } from "./responses.ts";
import { ALERT_ENTRY, CATALOG_ENTRY, GRAFANA_DASHBOARD } from "./service-schemas.ts";

const SHARED_SCHEMAS = [
  ...ERROR_SCHEMAS,
  CATALOG_ENTRY,
  ALERT_ENTRY,
  GRAFANA_DASHBOARD,
  ...STREAM_SCHEMAS,
];

const accept = () => () => true;
const asJson = () => (data: unknown) => JSON.stringify(data);

/** Before any route (of the app, and of a catalog's described entry routes): the shared schemas, and schemas kept to describing. */
export const describedRoutes = fp(async (app: FastifyInstance) => {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  app.setValidatorCompiler(accept);
  app.setSerializerCompiler(asJson);
});
