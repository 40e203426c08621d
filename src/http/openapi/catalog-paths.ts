// Each endpoint as its own paths in the document. The endpoint routes are generic
// (`/api/endpoints/:nameOrId`…) and the catalog can change while the service runs, so routes per
// endpoint cannot be (Fastify takes no route after it starts): the document @fastify/swagger
// generates from the routes holds each generic route once, and this makes it each endpoint's own
// paths from the catalog of the moment, with that endpoint's parameters, row, cache and paging.
// Not in swagger's own transformObject: it keeps the first document it makes for good, and this one
// must follow the catalog (routes.ts makes it again when the catalog is another).
import { z } from "zod";
import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { notFollowed } from "../follow-routes.ts";
import { csv } from "../formats/csv.ts";
import type { Format } from "../formats/format.ts";
import { json } from "../formats/json.ts";
import { ndjson } from "../formats/ndjson.ts";
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

/** Where the generic routes name the endpoint. */
const NAME_OR_ID = "{nameOrId}";

/** How one generic path names an endpoint; each way is a path of its own in the document. */
interface Naming {
  by: "name" | "id";
  /** After the operation id of the endpoint, as the path's operations are called. */
  operation: string;
  summary: string;
}

const BY_NAME: Naming = { by: "name", operation: "", summary: "by name" };
const BY_ID: Naming = { by: "id", operation: "_by_id", summary: "by id" };
const QUERY_PATH: Naming = {
  by: "name",
  operation: "_query_path",
  summary: "by name, at the path Logflare and Supabase Studio call",
};

/** The formats a suffix on a name names, `.json` first. */
const SUFFIXED: readonly Format[] = [json, ndjson, csv];

type Kind = "query" | "follow" | "watch";

const kindOf = (path: string): Kind =>
  path.endsWith("/follow") ? "follow" : path.endsWith("/watch") ? "watch" : "query";

/** Whether an endpoint has the paths of `kind`: a follow stream when followable, a watch when cached. */
const hasKind = (endpoint: EndpointDefinition, kind: Kind) =>
  kind === "query" ||
  (kind === "follow" ? endpoint.paging?.follow === true : endpoint.cache !== undefined);

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

/** `template` with the row it names made `endpoint`'s. */
const withRow = <T>(template: T, endpoint: EndpointDefinition): T =>
  JSON.parse(
    JSON.stringify(template).replaceAll(
      '"#/components/schemas/endpoint.row"',
      JSON.stringify(`#/components/schemas/${rowName(endpoint)}`),
    ),
  );

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

/** The operation of `template` (a generic route's) for `endpoint`, named as `naming` says. */
function operationFor(
  template: Operation,
  endpoint: EndpointDefinition,
  kind: Kind,
  naming: Naming,
  format?: Format,
): Operation {
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

/** `endpoint`'s paths of the generic route at `path`, each name path's format suffixes after it. */
function pathsOf(
  path: string,
  template: Operation,
  endpoint: EndpointDefinition,
): [string, { get: Operation }][] {
  const kind = kindOf(path);
  if (!hasKind(endpoint, kind)) return [];
  // By name, by UUID, and by either under /query (the path Logflare and Supabase Studio call).
  const namings = path.startsWith("/api/endpoints/query/") ? [BY_ID, QUERY_PATH] : [BY_NAME];
  return namings.flatMap((naming) => {
    const own = path.replace(NAME_OR_ID, endpoint[naming.by]);
    const suffixed = kind === "query" && naming.by === "name" ? SUFFIXED : [];
    return [
      [own, { get: operationFor(template, endpoint, kind, naming) }],
      ...suffixed.map((format): [string, { get: Operation }] => [
        `${own}.${format.suffix}`,
        { get: operationFor(template, endpoint, kind, naming, format) },
      ]),
    ];
  });
}

/** The generated document with each generic endpoint route made the paths of every endpoint. */
export function withCatalogPaths(
  generated: OpenApiDocument,
  endpoints: readonly EndpointDefinition[],
): OpenApiDocument {
  const generic = Object.entries(generated.paths).filter(([path]) => path.includes(NAME_OR_ID));
  const others = Object.entries(generated.paths).filter(([path]) => !path.includes(NAME_OR_ID));
  const { "endpoint.row": _placeholder, ...schemas } = generated.components.schemas ?? {};
  return {
    ...generated,
    tags: [
      ...generated.tags.filter(({ name }) => name !== SERVICE_TAG.name),
      ...endpoints.map(({ name, description }) => ({ name, description })),
      ...generated.tags.filter(({ name }) => name === SERVICE_TAG.name),
    ],
    paths: Object.fromEntries([
      ...endpoints.flatMap((endpoint) =>
        generic.flatMap(([path, { get }]) => pathsOf(path, get, endpoint)),
      ),
      ...others,
    ]),
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
