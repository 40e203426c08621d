// The OpenAPI document's shape, and the @fastify/swagger settings both of its sources are written
// with: the app's own routes (the probes, the listings, this document) and a catalog's entry
// routes (entry-document.ts).
import type { FastifyDynamicSwaggerOptions } from "@fastify/swagger";
import packageJson from "../../../package.json" with { type: "json" };
import type { Json } from "./responses.ts";
import { CATALOG_TAG, SERVICE_TAG } from "./service-schemas.ts";

export interface Operation {
  tags: string[];
  operationId: string;
  summary: string;
  description: string;
  /** Absent on an operation that takes none (a Grafana dashboard's). */
  parameters?: (Json & { name: string; in: string })[];
  responses: Record<string, Json>;
  security?: unknown[];
}

export interface OpenApiDocument {
  openapi: string;
  info: Json;
  security: Json[];
  tags: { name: string; description?: string }[];
  paths: Record<string, { get: Operation }>;
  components: {
    securitySchemes: Record<string, Json>;
    schemas: Record<string, Json>;
    responses: Record<string, Json>;
    headers: Record<string, Json>;
  };
}

export const SWAGGER_OPTIONS: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: "3.1.0",
    info: {
      title: "Log & usage query service",
      version: packageJson.version,
      description:
        "Saved, read-only analytics queries over request and function logs. Every call but the " +
        "probes needs a credential: an API key as `X-API-KEY`, or an API key or signed access " +
        "token as `Authorization: Bearer`. `GET /openapi.json` without a credential describes " +
        "every endpoint; with one, only those it may call, with the parameters its scopes fix. " +
        "Each path answers HEAD as its GET does, without the body; any other method is 405 " +
        "`method_not_allowed` with `Allow: GET, HEAD`, and a path not listed here is 404 `not_found`.",
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    tags: [CATALOG_TAG, SERVICE_TAG],
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "X-API-KEY", description: "An API key." },
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "An API key, or a signed access token (JWT) from your backend.",
        },
      },
    },
  },
  // Only routes that declare a tag are the API's: not the pages, their assets, nor the generic
  // routes that serve the entry routes.
  hideUntagged: true,
  // OpenAPI 3.1 schemas are JSON Schema: `const` is as good as a one-value enum.
  convertConstToEnum: false,
  // A shared schema is named in the document by its $id.
  refResolver: { buildLocalReference: (schema) => String(schema.$id) },
};

/**
 * The app's document with the entry routes' paths first, each endpoint's tag between the catalog's
 * and the service's, and their rows among the schemas.
 */
export function withEntryPaths(app: OpenApiDocument, entries: OpenApiDocument): OpenApiDocument {
  const service = app.tags.filter(({ name }) => name === SERVICE_TAG.name);
  return {
    ...app,
    tags: [...app.tags.filter((tag) => !service.includes(tag)), ...entries.tags, ...service],
    paths: { ...entries.paths, ...app.paths },
    components: {
      ...app.components,
      schemas: { ...entries.components.schemas, ...app.components.schemas },
    },
  };
}
