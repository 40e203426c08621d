// ALERT_RULES_FILE: alert rules, each an endpoint with its parameters (checked against the catalog,
// as a scope's fixed parameters are), a condition on its answer and a Standard Webhooks receiver.
// Read at startup (a bad file stops it with one line) and followed while the process runs (a bad
// file keeps the previous rules and logs one line naming the rule and the problem).
import { createHash } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import type { Catalog, EndpointDefinition, PagingContract } from "../endpoints/catalog.ts";
import { builtInCatalog } from "../endpoints/load-catalog.ts";
import { InvalidParamsError, parseParams, withWindowStart } from "../endpoints/params.ts";
import { RANGE_PARAMS } from "../endpoints/time-range.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { jsonErrorPlace } from "../json-syntax.ts";
import { SettingsFileError } from "../watched-file.ts";
import { type Comparison, parseComparison } from "./conditions.ts";

/** A condition on a cached endpoint's answer: its newest row, or any of its rows. */
export interface ValueCondition {
  kind: "rows";
  rows: "newest" | "any";
  comparison: Comparison;
}

/** A condition on a followable endpoint: at least `count` records matching the rule's parameters in a window. */
export interface RecordsCondition {
  kind: "records";
  count: number;
  withinSeconds: number;
}

export interface AlertRule {
  name: string;
  endpoint: EndpointDefinition;
  /** As written in the file, and as validated for the engine. */
  rawParams: Readonly<Record<string, string>>;
  params: SqlParams;
  condition: ValueCondition | RecordsCondition;
  /** The condition as written, for listings and payloads. */
  rawCondition: Readonly<Record<string, string | number>>;
  webhook: { url: string; secret: string };
  /** Names what the rule watches and when it fires: a rule changed in these is a new rule. */
  identity: string;
}

const NAME = /^[A-Za-z0-9][\w.-]{0,63}$/;
const AT_LEAST = "condition.at_least: a whole number from 1 to 1000";
const DURATION = /^([1-9][0-9]{0,6})([smhd])$/;
const UNIT_SECONDS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;
/** Parameters a rule counting records cannot take: it watches records from now on. */
const notWatched = ({ window }: PagingContract) =>
  [window.start, window.end, window.since, "cursor"].filter((param) => param !== undefined);

const ruleSchema = z.strictObject({
  name: z
    .string({ error: "needs a name" })
    .regex(
      NAME,
      "name: letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit",
    ),
  endpoint: z.string({ error: "needs endpoint: an endpoint's name or id" }),
  params: z.record(z.string(), z.string(), { error: "params: an object of strings" }).default({}),
  condition: z.union(
    [
      z.strictObject({ newest_row: z.string() }),
      z.strictObject({ any_row: z.string() }),
      z.strictObject({
        at_least: z.number().int(AT_LEAST).min(1, AT_LEAST).max(1000, AT_LEAST),
        within: z.string().regex(DURATION, "within: a whole number and s, m, h or d, e.g. 5m"),
      }),
    ],
    {
      error:
        'condition: {"newest_row": "<column> <op> <number>"}, {"any_row": …} or {"at_least": <1..1000>, "within": "5m"}',
    },
  ),
  webhook: z.strictObject({
    url: z
      .url({ protocol: /^https?$/, error: "webhook.url: an http or https URL" })
      .refine(
        (url) => !/^https?:\/\/[^/?#]*@/.test(url),
        "webhook.url: no user or password in it (fetch refuses them); put a token in the path or query",
      ),
    secret: z
      .string()
      .refine(validSecret, "webhook.secret: a Standard Webhooks secret, whsec_ and base64"),
  }),
});

const fileSchema = z.strictObject({ rules: z.array(z.unknown()) });

/** The rules of the file's text; a bad rule throws SettingsFileError naming it and the problem. */
export function parseRulesFile(
  path: string,
  text: string,
  catalog: Catalog = builtInCatalog(),
): AlertRule[] {
  const fail = (where: string, problem: string): never => {
    throw new SettingsFileError(`ALERT_RULES_FILE ${path}: ${where}${problem}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Where, not what: the parser's message quotes the text, which may hold a secret.
    const place = jsonErrorPlace(text);
    return fail("", place === undefined ? "not JSON" : `not JSON (${place})`);
  }
  const file = fileSchema.safeParse(json);
  if (!file.success) return fail("", 'expects {"rules": [ … ]}');
  const names = new Set<string>();
  return file.data.rules.map((entry, index) => {
    const named = (entry as { name?: unknown })?.name;
    const where = `rule ${index + 1}${typeof named === "string" ? ` ("${named}")` : ""}: `;
    const parsed = ruleSchema.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0] as z.core.$ZodIssue;
      return fail(where, issue.message);
    }
    if (names.has(parsed.data.name)) fail(where, "another rule has this name");
    names.add(parsed.data.name);
    try {
      return ruleOf(catalog, parsed.data);
    } catch (error) {
      return fail(where, (error as Error).message);
    }
  });
}

function ruleOf(catalog: Catalog, entry: z.infer<typeof ruleSchema>): AlertRule {
  const endpoint = catalog.find(entry.endpoint);
  if (!endpoint)
    throw new Error(`endpoint: no endpoint is named or has the id "${entry.endpoint}"`);
  const condition = conditionOf(endpoint, entry.condition);
  if (condition.kind === "records" && endpoint.paging) {
    const given = notWatched(endpoint.paging).filter((param) => entry.params[param] !== undefined);
    if (given.length > 0) {
      throw new Error(`params.${given[0]}: not taken by a rule, which counts records from now on`);
    }
  }
  // A rule watches a value as it moves with now; a range is resolved per request, and fixed once made.
  const ranged = endpoint.range
    ? RANGE_PARAMS.filter((param) => entry.params[param] !== undefined)
    : [];
  if (ranged.length > 0) {
    throw new Error(
      `params.${ranged[0]}: not taken by a rule, which watches its endpoint's value as its ${endpoint.range?.spanParam ?? "span"} gives it`,
    );
  }
  let params: SqlParams;
  try {
    // `since` is refused above where it means anything; resolved, it leaves only bound parameters.
    params = withWindowStart(
      endpoint.paging?.window,
      parseParams(endpoint.params, entry.params),
      0n,
    );
  } catch (error) {
    if (!(error instanceof InvalidParamsError)) throw error;
    const [detail] = error.details;
    throw new Error(`params.${detail?.param}: ${detail?.message}`);
  }
  // Not the webhook: a new secret or receiver is the same rule, in the state it was. The
  // endpoint's revision: a rule on an endpoint a reload changed runs its new SQL, as a new rule.
  const identity = createHash("sha256")
    .update(JSON.stringify([entry.name, endpoint.id, endpoint.revision, params, entry.condition]))
    .digest("base64url");
  return {
    name: entry.name,
    endpoint,
    rawParams: entry.params,
    params,
    condition,
    rawCondition: entry.condition,
    webhook: entry.webhook,
    identity,
  };
}

function conditionOf(
  endpoint: EndpointDefinition,
  written: z.infer<typeof ruleSchema>["condition"],
): AlertRule["condition"] {
  if ("at_least" in written) {
    if (!endpoint.paging?.follow) {
      throw new Error(
        `condition: at_least counts records, and ${endpoint.name} has none to follow`,
      );
    }
    const [, count = "0", unit = "s"] = DURATION.exec(written.within) ?? [];
    const withinSeconds = Number(count) * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS];
    return { kind: "records", count: written.at_least, withinSeconds };
  }
  if (!endpoint.cache) {
    throw new Error(
      `condition: ${endpoint.name} has no cached value to compare; count its records with at_least and within`,
    );
  }
  const [rows, text] =
    "newest_row" in written
      ? (["newest", written.newest_row] as const)
      : (["any", written.any_row] as const);
  return { kind: "rows", rows, comparison: parseComparison(endpoint, text) };
}

function validSecret(secret: string): boolean {
  if (!secret.startsWith("whsec_")) return false;
  try {
    new Webhook(secret);
    return true;
  } catch {
    return false;
  }
}
