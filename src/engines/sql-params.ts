// What an endpoint's SQL is run with, as the engines bind it: its own module, since the engines,
// the parameters' validation (endpoints/params.ts) and everything that reads or extends validated
// parameters (cursors, windows, the runner) need it.

/** Validated parameters as the SQL binds them: every declared name, null when absent. */
export type SqlParams = Record<string, string | null>;

/**
 * What the engine binds beside the parameters (window_start, ...), from its one reading of now
 * (epoch µs): an endpoint's time window (window.ts), declared in its definition.
 */
export type WindowBinding = (params: SqlParams, now: bigint) => SqlParams;
