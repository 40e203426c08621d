// Each endpoint as its own paths in the document. The endpoint routes are generic
// (`/api/endpoints/:nameOrId`…) and the catalog can change while the service runs, so routes per
// endpoint cannot be (Fastify takes no route after it starts): the document @fastify/swagger
// generates from the routes holds each generic route once, and this describes each entry route of
// the catalog of the moment (route-kinds.ts: the paths requests find their endpoint at) from its
// kind's generic route, with that endpoint's parameters, row, cache and paging.
// Not in swagger's own transformObject: it keeps the first document it makes for good, and this one
// must follow the catalog (routes.ts makes it again when the catalog is another).
import { z } from "zod";
import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { notFollowed } from "../follow-routes.ts";
import type { Format } from "../formats/format.ts";
import { json } from "../formats/json.ts";
import {
  DOCUMENTED_GENERIC_PATHS,
  documentedGenericPath,
  type EntryRoute,
  entryRoutes,
} from "../route-kinds.ts";
import { CACHE, FORMAT_BODIES, mediaType } from "./endpoint-schemas.ts";
import type { Json } from "./responses.ts";
import { SERVICE_TAG } from "./service-schemas.ts";

export interface Operation {
  tags: string[];
  operationId: string;
  summary: string;
  description: string;
  parameters: (Json & { name: string; in: string })[];
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

interface ParamsJsonSchema {
  properties: Record<string, Json & { description?: string }>;
  required?: string[];
}

/** Each query parameter, as the endpoint's validator takes it. */
function parametersOf(endpoint: EndpointDefinition): Operation["parameters"] {
  const schema = z.toJSONSchema(endpoint.params, {
    io: "input",
    unrepresentable: "any",
  }) as unknown as ParamsJsonSchema;
  return Object.entries(schema.properties).map(([name, { description, ...property }]) => ({
    name,
    in: "query",
    required: schema.required?.includes(name) ?? false,
    description,
    schema: property,
    ...(endpoint.example[name] !== undefined && { example: endpoint.example[name] }),
  }));
}

const rowName = (endpoint: EndpointDefinition) => `${endpoint.name}.row`;

/** Where the generic routes' schemas refer to the row (endpoint-schemas.ts's placeholder). */
const ROW_PLACEHOLDER_REF = "#/components/schemas/endpoint.row";

/** A copy of `template` with each reference to the placeholder row made one to `endpoint`'s. */
function withRow<T>(template: T, endpoint: EndpointDefinition): T {
  if (Array.isArray(template)) return template.map((item) => withRow(item, endpoint)) as T;
  if (template === null || typeof template !== "object") return template;
  return Object.fromEntries(
    Object.entries(template).map(([key, value]) => [
      key,
      key === "$ref" && value === ROW_PLACEHOLDER_REF
        ? `#/components/schemas/${rowName(endpoint)}`
        : withRow(value, endpoint),
    ]),
  ) as T;
}

const cachedNote = (endpoint: EndpointDefinition) =>
  endpoint.cache
    ? ` Cached ${endpoint.cache.ttlSeconds} s and warmed every ${endpoint.cache.warmingSeconds} s: a matching If-None-Match gets 304.`
    : "";

/**
 * An endpoint's 200: in `format` at its suffix's path; without one (the plain path), in JSON and
 * in each format Accept picks there. Only the headers its cache and paging send.
 */
function okResponse(template: Json, endpoint: EndpointDefinition, format?: Format): Json {
  const headers = Object.entries(template.headers as Json).filter(
    ([name]) =>
      (endpoint.cache || !CACHE.includes(name as never)) && (endpoint.paging || name !== "Link"),
  );
  const body = FORMAT_BODIES.get(format ?? json)?.(rowName(endpoint)) ?? "";
  const offered = template.content as Record<string, { schema: Json }>;
  const content = structuredClone(
    format ? { [mediaType(format)]: offered[mediaType(format)] } : offered,
  );
  const result = (content[mediaType(json)]?.schema.properties as { result?: Json } | undefined)
    ?.result;
  if (result) result.maxItems = endpoint.maxRows;
  return {
    description: `The rows, at most ${endpoint.maxRows}${format && format !== json ? "." : ":"} ${body}${cachedNote(endpoint)}`,
    headers: Object.fromEntries(headers),
    content,
  };
}

/** The operation of `template` (its kind's generic route's) at the entry route `route`. */
function operationFor(template: Operation, route: EntryRoute): Operation {
  const { endpoint, naming, format } = route;
  const kind = route.row.name;
  const own = withRow(template, endpoint);
  const unfollowed = endpoint.paging ? notFollowed(endpoint.paging) : [];
  const endpointParams = parametersOf(endpoint).filter(
    (parameter) => kind !== "follow" || !unfollowed.includes(parameter.name),
  );
  const routeParams = own.parameters.filter(
    (parameter) =>
      parameter.in !== "path" && (parameter.name !== "If-None-Match" || endpoint.cache),
  );
  // Word characters only: Swagger UI's "try it" fails to find an operation whose id has a dot.
  const id = `${endpoint.name.replace(/\W/g, "_")}${naming.operation}`;
  const operation: Operation = {
    ...own,
    tags: [endpoint.name],
    operationId: [id, format?.suffix, kind === "query" ? undefined : kind]
      .filter(Boolean)
      .join("_"),
    summary: [endpoint.name, kind === "query" ? undefined : own.summary, naming.summary]
      .filter(Boolean)
      .join(", "),
    parameters: [...endpointParams, ...routeParams],
  };
  if (kind !== "query") return operation;
  const { 200: ok, 304: notModified, 406: notAcceptable, ...errors } = own.responses;
  operation.description = `${endpoint.description} ${own.description}`;
  if (format) {
    operation.summary = `${endpoint.name} as ${mediaType(format)}, ${naming.summary}`;
    operation.description += ` The suffix \`.${format.suffix}\` names the format, whatever Accept says.`;
  }
  operation.responses = {
    200: okResponse(ok as Json, endpoint, format),
    ...(endpoint.cache && { 304: notModified }),
    // The suffix, not Accept, names the format.
    ...(!format && { 406: notAcceptable }),
    ...errors,
  } as Record<string, Json>;
  return operation;
}

/**
 * The generated document with each generic endpoint route made the entry routes of `endpoints`. A
 * kind whose generic route is not registered (watch, without a cache) has no paths.
 */
export function withCatalogPaths(
  generated: OpenApiDocument,
  endpoints: readonly EndpointDefinition[],
): OpenApiDocument {
  const own = entryRoutes(endpoints).flatMap((route): [string, { get: Operation }][] => {
    const template = generated.paths[documentedGenericPath(route.row, route.naming)]?.get;
    return template ? [[route.url, { get: operationFor(template, route) }]] : [];
  });
  const others = Object.entries(generated.paths).filter(
    ([path]) => !DOCUMENTED_GENERIC_PATHS.has(path),
  );
  const { "endpoint.row": _placeholder, ...schemas } = generated.components.schemas ?? {};
  return {
    ...generated,
    tags: [
      ...generated.tags.filter(({ name }) => name !== SERVICE_TAG.name),
      ...endpoints.map(({ name, description }) => ({ name, description })),
      ...generated.tags.filter(({ name }) => name === SERVICE_TAG.name),
    ],
    paths: Object.fromEntries([...own, ...others]),
    components: {
      ...generated.components,
      schemas: {
        ...Object.fromEntries(
          endpoints.map((endpoint) => [rowName(endpoint), endpoint.columns as unknown as Json]),
        ),
        ...schemas,
      },
    },
  };
}
