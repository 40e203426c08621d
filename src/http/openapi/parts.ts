// What the document's sections build with: references into its components, and the schemas they
// share.

export type Json = Record<string, unknown>;

export const ref = (section: string, name: string) => ({
  $ref: `#/components/${section}/${name}`,
});

/** The names of the components of `section` that `part` of the document refers to. */
export const referenced = (section: string, part: unknown): Set<string> =>
  new Set(
    [...JSON.stringify(part).matchAll(new RegExp(`"#/components/${section}/([^"]+)"`, "g"))].map(
      ([, name]) => name as string,
    ),
  );

/** A response's headers, each a reference to the component of that name. */
export const headers = (...names: string[]) =>
  Object.fromEntries(names.map((name) => [name, ref("headers", name)]));

/** The shared error response of each status. */
export const errorResponses = (statuses: readonly number[]) =>
  Object.fromEntries(statuses.map((status) => [status, ref("responses", String(status))]));

export const STRING = { type: "string" };
export const INTEGER = { type: "integer", minimum: 0 };

export const RATE_LIMIT = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

/** Statuses any request can be answered: its shape refused, or a bug. */
export const ANY_REQUEST_ERRORS = [408, 413, 431, 500];
