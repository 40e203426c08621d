// The document a credential sees: the whole one, less the endpoints it may not call, a follow
// stream its scope would refuse and /metrics without full access; with each value its scopes fix
// shown as the only one taken.
import type { EndpointDefinition } from "../../endpoints/catalog.ts";
import { ROUTE_KINDS, routesOfEndpoint } from "../route-kinds.ts";
import { pruned } from "./components.ts";
import type { OpenApiDocument, Operation } from "./document.ts";
import { CATALOG_TAG, SERVICE_TAG } from "./service-schemas.ts";

/** An endpoint the credential may call, with the parameters its scope fixes. */
export interface Callable {
  endpoint: EndpointDefinition;
  fixed: Readonly<Record<string, string>>;
}

/** What a credential may see: the endpoints it may call, and whether /metrics (full access only). */
export interface Grant {
  callable: readonly Callable[];
  metrics: boolean;
}

/** A fixed parameter may only be omitted or equal. */
function withFixed(operation: Operation, fixed: Callable["fixed"]): Operation {
  if (!operation.parameters) return operation;
  return {
    ...operation,
    parameters: operation.parameters.map((parameter) => {
      const value = parameter.in === "query" ? fixed[parameter.name] : undefined;
      if (value === undefined) return parameter;
      const { example: _example, examples: _examples, ...fixedParameter } = parameter;
      return {
        ...fixedParameter,
        required: false,
        description: `${parameter.description}. Fixed by this credential: omit it, or send exactly this value.`,
        schema: { ...(parameter.schema as object), const: value, default: value },
      };
    }),
  };
}

/** The tags of the operations that are not an endpoint's. */
const SERVICE_TAGS = [CATALOG_TAG.name, SERVICE_TAG.name];

/** `document` (every endpoint's) as a credential granted `grant` sees it. */
export function credentialView(
  document: OpenApiDocument,
  { callable, metrics }: Grant,
): OpenApiDocument {
  // Each path of what it may call, by the entry route the document describes there.
  const granted = new Map(
    callable.flatMap((entry) =>
      routesOfEndpoint(entry.endpoint).map(({ url, row }) => [url, { entry, row }] as const),
    ),
  );
  const paths: [string, { get: Operation }][] = [];
  for (const [path, { get }] of Object.entries(document.paths)) {
    const tag = get.tags[0] as string;
    if (SERVICE_TAGS.includes(tag)) {
      if (path !== "/metrics" || metrics) paths.push([path, { get }]);
      continue;
    }
    const route = granted.get(path);
    if (!route || (route.row === ROUTE_KINDS.follow && fixesEnd(route.entry))) continue;
    paths.push([path, { get: withFixed(get, route.entry.fixed) }]);
  }
  const tags = new Set(paths.map(([, { get }]) => get.tags[0]));
  return pruned({
    ...document,
    tags: document.tags.filter(({ name }) => tags.has(name)),
    paths: Object.fromEntries(paths),
  });
}

/** A follow stream runs on past any end, so a scope fixing the end of its window refuses it. */
function fixesEnd({ endpoint, fixed }: Grant["callable"][number]): boolean {
  const end = endpoint.paging?.window.end;
  return end !== undefined && fixed[end] !== undefined;
}
