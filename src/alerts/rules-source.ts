// ALERT_RULES_FILE as the process follows it: read now, then again as it changes (watched-file.ts).
import type { Catalog } from "../endpoints/catalog.ts";
import { WatchedFile } from "../watched-file.ts";
import { type AlertRule, parseRulesFile } from "./rules-file.ts";

export type AlertRulesFile = WatchedFile<AlertRule[]>;

/** Reads the rules now; a bad file throws SettingsFileError naming the rule and the problem. */
export function openAlertRules(path: string, catalog?: Catalog): AlertRulesFile {
  return new WatchedFile(path, {
    variable: "ALERT_RULES_FILE",
    noun: "rules",
    parse: (text) => parseRulesFile(path, text, catalog),
    summary: (rules) => ({ rules: rules.length }),
  });
}
