// ALERT_RULES_FILE as the process follows it: read now, then again as it changes (watched-file.ts).
import { type Catalog, endpointGone } from "../endpoints/catalog.ts";
import { builtInCatalog } from "../endpoints/load-catalog.ts";
import { type Reading, WatchedFile } from "../watched-file.ts";
import { type AlertRule, parseRulesFile } from "./rules-file.ts";

export type AlertRulesFile = WatchedFile<AlertRule[]>;

/** Reads the rules now; a bad file throws SettingsFileError naming the rule and the problem. */
export function openAlertRules(path: string, catalog: Catalog = builtInCatalog()): AlertRulesFile {
  return new WatchedFile(
    path,
    {
      variable: "ALERT_RULES_FILE",
      read: (text, against, previous) => readRules(path, text, against, previous),
      summary: (rules) => ({ rules: rules.length }),
    },
    catalog,
  );
}

/**
 * The rules of the text against `catalog`. On reload a bad file keeps the previous rules whose
 * endpoint `catalog` serves as it was: a rule on an endpoint that went or changed stops with it.
 */
function readRules(
  path: string,
  text: string,
  catalog: Catalog,
  previous: AlertRule[] | undefined,
): Reading<AlertRule[]> {
  try {
    return { value: parseRulesFile(path, text, catalog), problems: [], warnings: [] };
  } catch (error) {
    const problem = (error as Error).message;
    if (!previous) return { value: [], problems: [problem], warnings: [] };
    const kept = previous.filter((rule) => !endpointGone(catalog, rule.endpoint));
    const stopped = previous.filter((rule) => !kept.includes(rule)).map((rule) => rule.name);
    const stopping = stopped.length
      ? ` but ${stopped.join(", ")}, whose endpoint went or changed`
      : "";
    return {
      value: kept,
      problems: [`${problem}; keeping the previous rules${stopping}`],
      warnings: [],
    };
  }
}
