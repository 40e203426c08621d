// `npm run key -- --name acme --scope 'functions.invocation-stats:project=acme' [--scope ...]
//   [--rate-limit 120] [--expires-at 2027-01-01T00:00:00Z]`
// Prints a new random key once, and the API_KEYS_FILE entry (its SHA-256, never the key) to paste.
import { randomBytes } from "node:crypto";
import { sha256Hex } from "../src/credentials/authenticate.ts";
import { credentialArgs } from "./credential-args.ts";

const USAGE =
  "usage: npm run key -- --name <name> --scope '<endpoint|*>[:<param>=<value>&...]' [--scope ...] [--rate-limit <n>] [--expires-at <ISO 8601>]";

const { options, name, scopes, rateLimitPerMinute } = credentialArgs(USAGE, ["expires-at"]);
const expiresAt = options["expires-at"];
if (typeof expiresAt === "string" && Number.isNaN(Date.parse(expiresAt))) {
  process.stderr.write(`--expires-at expects an ISO 8601 time, e.g. 2027-01-01T00:00:00Z\n`);
  process.exit(2);
}

const key = randomBytes(24).toString("base64url");
const entry = {
  name,
  sha256: sha256Hex(key),
  scopes,
  ...(rateLimitPerMinute !== undefined && { rate_limit_per_minute: rateLimitPerMinute }),
  ...(typeof expiresAt === "string" && { expires_at: new Date(expiresAt).toISOString() }),
};
process.stdout.write(
  `Key (shown once; give it to ${name}, it is not stored anywhere):\n\n  ${key}\n\n` +
    `Entry for the "keys" array of API_KEYS_FILE:\n\n${JSON.stringify(entry, null, 2)}\n`,
);
