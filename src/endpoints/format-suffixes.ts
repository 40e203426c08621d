// The suffixes that ask for a format on an endpoint's name path (`/api/endpoints/logs.all.csv`):
// the formats take theirs from here, and no endpoint may be named with one at its end, or its name
// would be another endpoint's path in that format.
export const FORMAT_SUFFIXES = { json: "json", ndjson: "ndjson", csv: "csv" } as const;

/** The suffix `name` ends in (`.csv`), if any. */
export function formatSuffixOf(name: string): string | undefined {
  return Object.values(FORMAT_SUFFIXES)
    .map((suffix) => `.${suffix}`)
    .find((suffix) => name.endsWith(suffix));
}
