// What an endpoint's SQL is run with: its own module, since the parameters' validation (params.ts)
// and everything that reads or extends validated parameters (cursors, windows, the runner) need it.

/** Validated parameters as the SQL binds them: every declared name, null when absent. */
export type SqlParams = Record<string, string | null>;
