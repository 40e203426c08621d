// The document's part for a catalog's endpoints, written by @fastify/swagger from their entry routes
// themselves (route-kinds.ts): each registered with the schema it declares, in an app of its own
// that never listens (the serving app takes no route once it listens, and a reload brings another
// catalog), so that each path is described by the schema its route declares, and by nothing else.
import swagger from "@fastify/swagger";
import Fastify from "fastify";
import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { entryRoutes, type KindRow } from "../route-kinds.ts";
import { describedRoutes } from "./described-routes.ts";
import { type OpenApiDocument, SWAGGER_OPTIONS } from "./document.ts";
import { rowSchemaOf } from "./entry-schemas.ts";

/**
 * The paths of every entry route of `endpoints` of a kind the app serves, their tags and their
 * rows' schemas.
 */
export async function describeEntries(
  endpoints: readonly EndpointDefinition[],
  served: (row: KindRow) => boolean = () => true,
): Promise<OpenApiDocument> {
  const app = Fastify({ logger: false, routerOptions: { maxParamLength: 200 } });
  try {
    await app.register(describedRoutes);
    for (const endpoint of endpoints) app.addSchema(rowSchemaOf(endpoint));
    const tags = endpoints.map(({ name, description }) => ({ name, description }));
    await app.register(swagger, {
      ...SWAGGER_OPTIONS,
      openapi: { ...SWAGGER_OPTIONS.openapi, tags },
    });
    for (const route of entryRoutes(endpoints).filter(({ row }) => served(row))) {
      // A copy: @fastify/swagger moves examples and descriptions out of the schemas it is given.
      app.get(
        route.url,
        { schema: structuredClone(route.row.schema(route)), exposeHeadRoute: false },
        noAnswer,
      );
    }
    await app.ready();
    return app.swagger() as unknown as OpenApiDocument;
  } finally {
    await app.close();
  }
}

/** The routes are described, never called. */
const noAnswer = async () => null;
