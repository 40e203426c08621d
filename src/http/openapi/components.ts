// The parts of the document many operations share, named once under `components`, and no
// component that nothing names.
import type { OpenApiDocument } from "./document.ts";
import { isSharedErrorResponse, type Json } from "./responses.ts";

const ref = (section: string, name: string) => ({ $ref: `#/components/${section}/${name}` });

/**
 * The generated document with each response header and each status's shared error response (the
 * routes declare them in full) in `components`, where every operation refers to them.
 */
export function withSharedComponents(document: OpenApiDocument): OpenApiDocument {
  const headers: Record<string, Json> = {};
  const responses: Record<string, Json> = {};
  for (const { get } of Object.values(document.paths)) {
    for (const [status, response] of Object.entries(get.responses)) {
      for (const [name, header] of Object.entries(
        (response.headers ?? {}) as Record<string, Json>,
      )) {
        headers[name] = header;
        (response.headers as Record<string, Json>)[name] = ref("headers", name);
      }
      if (isSharedErrorResponse(Number(status), response)) {
        responses[status] = response;
        get.responses[status] = ref("responses", status);
      }
    }
  }
  return { ...document, components: { ...document.components, headers, responses } };
}

const REFERENCE = /"#\/components\/(\w+)\/([^"]+)"/g;

/** `document` without the components that its paths do not name, directly or through others. */
export function pruned(document: OpenApiDocument): OpenApiDocument {
  const { securitySchemes, ...named } = document.components as OpenApiDocument["components"] &
    Record<string, Record<string, Json>>;
  const reached = new Set<string>();
  let frontier: unknown = document.paths;
  while (frontier !== undefined) {
    const found = [...JSON.stringify(frontier).matchAll(REFERENCE)]
      .map(([, section, name]) => [section as string, name as string] as const)
      .filter(([section, name]) => !reached.has(`${section}/${name}`));
    for (const [section, name] of found) reached.add(`${section}/${name}`);
    frontier =
      found.length > 0 ? found.map(([section, name]) => named[section]?.[name]) : undefined;
  }
  return {
    ...document,
    components: {
      securitySchemes,
      ...(Object.fromEntries(
        Object.entries(named).map(([section, components]) => [
          section,
          Object.fromEntries(
            Object.entries(components).filter(([name]) => reached.has(`${section}/${name}`)),
          ),
        ]),
      ) as Omit<OpenApiDocument["components"], "securitySchemes">),
    },
  };
}
