// The command-line form of scopes shared by `npm run key` and `npm run token`:
// --scope '<endpoint>[:<param>=<value>[&<param>=<value>...]]', repeatable; endpoint is a name, UUID or *.
// Values are taken verbatim (a regex's `+`, `:` and `\` included); only `&` separates them.
// Scopes name the built-in endpoints and those of the folders ENDPOINTS_DIR lists.
import { parseArgs } from "node:util";
import { endpointsDirsOf } from "../src/config.ts";
import { type Scope, scopesSchema } from "../src/credentials/credential.ts";
import { BUILT_IN_ENDPOINTS, CatalogError, loadCatalog } from "../src/endpoints/load-catalog.ts";

export function parseScope(text: string): Scope {
  const colon = text.indexOf(":");
  const endpoint = colon < 0 ? text : text.slice(0, colon);
  const pairs = colon < 0 || colon === text.length - 1 ? [] : text.slice(colon + 1).split("&");
  const fixed_params: Record<string, string> = {};
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw new Error(`--scope ${text}: "${pair}" is not <param>=<value>`);
    fixed_params[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return { endpoint, fixed_params };
}

/** The endpoints the service serves: the built-in ones and those of ENDPOINTS_DIR, as it reads it. */
function servedCatalog() {
  try {
    return loadCatalog([BUILT_IN_ENDPOINTS, ...endpointsDirsOf(process.env.ENDPOINTS_DIR)]);
  } catch (error) {
    if (!(error instanceof CatalogError)) throw error;
    throw new Error(`ENDPOINTS_DIR: ${error.problems.join("; ")}`);
  }
}

/** The command's options, with scopes checked against the catalog; exits with a message on misuse. */
export function credentialArgs(usage: string, extra: readonly string[]) {
  try {
    const { values } = parseArgs({
      options: {
        name: { type: "string" },
        scope: { type: "string", multiple: true },
        "rate-limit": { type: "string" },
        ...Object.fromEntries(extra.map((option) => [option, { type: "string" as const }])),
      },
      strict: true,
    });
    const name = values.name;
    if (typeof name !== "string" || name === "") throw new Error("--name is required");
    const scopes = scopesSchema(servedCatalog()).safeParse((values.scope ?? []).map(parseScope));
    if (!scopes.success) {
      const issue = scopes.error.issues[0];
      throw new Error(`--scope ${issue?.path.join(".")}: ${issue?.message}`);
    }
    const rateLimit = values["rate-limit"];
    const rateLimitPerMinute = rateLimit === undefined ? undefined : Number(rateLimit);
    if (
      rateLimitPerMinute !== undefined &&
      !(Number.isInteger(rateLimitPerMinute) && rateLimitPerMinute > 0)
    ) {
      throw new Error("--rate-limit expects a positive whole number of requests a minute");
    }
    const options = values as Record<string, string | undefined>;
    return { options, name, scopes: scopes.data, rateLimitPerMinute };
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
}
