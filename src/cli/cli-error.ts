// How the command-line client fails: an error that says what went wrong and the exit code that tells
// a script which kind of failure it was.
/** Exit codes, one per kind of failure, so that a script can tell them apart. */
export const EXIT = {
  ok: 0,
  /** Anything unforeseen. */
  failed: 1,
  /** The command line, or a parameter the service refused (400). */
  usage: 2,
  /** No key, or a key the service refused (401, 403). */
  auth: 3,
  /** No such endpoint (404). */
  notFound: 4,
  /** The service failed or would not answer in time (5xx, 429 past the retries). */
  server: 5,
  /** The service could not be reached. */
  network: 6,
} as const;

export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}
