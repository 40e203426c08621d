// GET /api/endpoints: the catalog as the caller's credential may call it, each endpoint with its
// parameters, paths, cache and paging.
import type { FastifyInstance } from "fastify";
import type { Credential } from "../credentials/credential.ts";
import { callableBy } from "../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../endpoints/catalog.ts";
import { durationText, type RangeContract } from "../endpoints/time-range.ts";
import { LISTING } from "./endpoint-request.ts";
import { LISTING_SCHEMA } from "./openapi/service-schemas.ts";
import type { EndpointRequests } from "./route-kind.ts";
import { listedPaths } from "./route-kinds.ts";

export async function catalogListing(
  app: FastifyInstance,
  { catalog, requests }: { catalog: Catalog; requests: EndpointRequests },
) {
  // One listing per credential and catalog, built on its first request: credentials are few and
  // long-lived, and a reload replaces the catalog's entries whole.
  const listings = new WeakMap<readonly EndpointDefinition[], WeakMap<Credential, string>>();
  const listingFor = (credential: Credential) => {
    const { entries } = catalog;
    let ofCatalog = listings.get(entries);
    if (ofCatalog === undefined) {
      ofCatalog = new WeakMap();
      listings.set(entries, ofCatalog);
    }
    let listing = ofCatalog.get(credential);
    if (listing === undefined) {
      const callable = callableBy(credential, entries).map(({ endpoint, fixed }) => ({
        ...describeEndpoint(endpoint),
        fixed_params: fixed,
      }));
      listing = JSON.stringify({ result: callable });
      ofCatalog.set(credential, listing);
    }
    return listing;
  };
  app.get("/api/endpoints", { schema: LISTING_SCHEMA }, async (request, reply) => {
    const format = requests.list(LISTING, request, reply);
    return reply.type(format.contentType).send(listingFor(request.credential));
  });
}

function describeEndpoint(endpoint: EndpointDefinition) {
  const schema = endpoint.paramsJsonSchema;
  return {
    name: endpoint.name,
    id: endpoint.id,
    description: endpoint.description,
    params: Object.entries(schema.properties).map(([name, property]) => ({
      name,
      type: "string",
      required: schema.required?.includes(name) ?? false,
      description: property.description,
      ...(property.enum && { allowed: property.enum }),
      ...(property.examples && { examples: property.examples }),
      ...(property.default !== undefined && { default: property.default }),
      ...(property.format && { format: property.format }),
    })),
    max_rows: endpoint.maxRows,
    cache: endpoint.cache
      ? { ttl_seconds: endpoint.cache.ttlSeconds, warming_seconds: endpoint.cache.warmingSeconds }
      : null,
    paths: listedPaths(endpoint),
    time_columns: endpoint.timeColumns,
    example: `/api/endpoints/${endpoint.name}?${new URLSearchParams(endpoint.example)}`,
    ...(endpoint.range && { range: describeRange(endpoint.range) }),
    ...(endpoint.paging && {
      paging: {
        page_size: endpoint.paging.pageSize,
        order: endpoint.paging.order,
        window: endpoint.paging.window,
        follow: endpoint.paging.follow,
      },
    }),
  };
}

/** How an endpoint answers any time range: what it stands in for, its buckets and its bounds. */
const describeRange = ({ spanParam, ladder, maxPoints, maxRange }: RangeContract) => ({
  ...(spanParam && { instead_of: spanParam }),
  ladder: ladder.map(durationText),
  max_points: maxPoints,
  max_range: durationText(maxRange),
});
