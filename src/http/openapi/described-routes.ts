// Route schemas here describe; they neither validate nor serialize. A request's parameters are
// checked by the endpoint's own validator (endpoints/params.ts), which names every bad one in the
// envelope's 400, and bodies are written as JSON.stringify writes them, as without a schema. (So
// the schemas are plain JSON Schema rather than zod through fastify-type-provider-zod, whose point
// is validating with them; and a generic endpoint route has no one endpoint's schema to give it.) The
// schemas the routes refer to by `$id` (the error envelopes, the listings' entries, the streams'
// end) are the app's shared schemas, which the document names once each.
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { ROW_PLACEHOLDER, STREAM_SCHEMAS } from "./endpoint-schemas.ts";
import { ERROR_SCHEMAS } from "./responses.ts";
import { ALERT_ENTRY, CATALOG_ENTRY } from "./service-schemas.ts";

const SHARED_SCHEMAS = [
  ...ERROR_SCHEMAS,
  CATALOG_ENTRY,
  ALERT_ENTRY,
  ...STREAM_SCHEMAS,
  ROW_PLACEHOLDER,
];

const accept = () => () => true;
const asJson = () => (data: unknown) => JSON.stringify(data);

/** Before any route: the shared schemas, and schemas kept to describing. */
export const describedRoutes = fp(async (app: FastifyInstance) => {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  app.setValidatorCompiler(accept);
  app.setSerializerCompiler(asJson);
});
