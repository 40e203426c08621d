// What ALERT_RULES_FILE accepts, and the one line a bad rule gets: which rule, what is wrong.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseRulesFile } from "../../src/alerts/rules-file.ts";
import { openAlertRules } from "../../src/alerts/rules-source.ts";

const SECRET = `whsec_${Buffer.from("a test secret of 24 bytes!").toString("base64")}`;
const WEBHOOK = { url: "https://hooks.example.com/alerts", secret: SECRET };
const STATS_RULE = {
  name: "errors",
  endpoint: "functions.invocation-stats",
  params: { project: "default", interval: "1hr" },
  condition: { newest_row: "error_count >= 10" },
  webhook: WEBHOOK,
};

const problemOf = (rule: Record<string, unknown>) => {
  try {
    parseRulesFile("rules.json", JSON.stringify({ rules: [rule] }));
    return undefined;
  } catch (error) {
    return (error as Error).message.replace('ALERT_RULES_FILE rules.json: rule 1 ("errors"): ', "");
  }
};

describe("ALERT_RULES_FILE", () => {
  it("takes rules on a cached value's newest or any row, and on logs.all's records within a window", () => {
    const rules = parseRulesFile(
      "rules.json",
      JSON.stringify({
        rules: [
          STATS_RULE,
          { ...STATS_RULE, name: "slow", condition: { any_row: "p99_execution_time > 2000" } },
          {
            name: "usage",
            endpoint: "fa6e0509-d5f7-468e-b429-8c4aecf8563d",
            params: { project: "^https://default\\.", interval: "hourly" },
            condition: { newest_row: "total_rest_requests < 1" },
            webhook: WEBHOOK,
          },
          {
            name: "5xx",
            endpoint: "logs.all",
            params: { project: "default", project_tier: "FREE", status: "5xx" },
            condition: { at_least: 10, within: "5m" },
            webhook: WEBHOOK,
          },
        ],
      }),
    );
    expect(rules.map((rule) => [rule.name, rule.endpoint.name, rule.condition])).toEqual([
      [
        "errors",
        "functions.invocation-stats",
        {
          kind: "rows",
          rows: "newest",
          comparison: { column: "error_count", operator: ">=", value: 10 },
        },
      ],
      [
        "slow",
        "functions.invocation-stats",
        {
          kind: "rows",
          rows: "any",
          comparison: { column: "p99_execution_time", operator: ">", value: 2000 },
        },
      ],
      [
        "usage",
        "usage.api-counts",
        {
          kind: "rows",
          rows: "newest",
          comparison: { column: "total_rest_requests", operator: "<", value: 1 },
        },
      ],
      ["5xx", "logs.all", { kind: "records", count: 10, withinSeconds: 300 }],
    ]);
    // A changed rule is another rule, with a state of its own.
    const [first, second] = parseRulesFile(
      "rules.json",
      JSON.stringify({ rules: [STATS_RULE, { ...STATS_RULE, name: "other" }] }),
    );
    expect(first?.identity).not.toBe(second?.identity);
  });

  it.each([
    [{ endpoint: "no.such" }, 'endpoint: no endpoint is named or has the id "no.such"'],
    [{ params: { project: "default" } }, expect.stringMatching(/^params\.interval: required/)],
    [
      { condition: { newest_row: "errors >= 1" } },
      expect.stringContaining("no numeric column errors"),
    ],
    [
      { condition: { newest_row: "error_count ~ 1" } },
      expect.stringContaining("is not <column> <op> <number>"),
    ],
    [{ condition: { at_least: 5, within: "5m" } }, expect.stringContaining("has none to follow")],
    [
      { condition: { at_least: 1001, within: "5m" } },
      "condition.at_least: a whole number from 1 to 1000",
    ],
    [
      { condition: { at_least: 5, within: "5 minutes" } },
      expect.stringContaining("within: a whole number"),
    ],
    [
      { webhook: { url: "ftp://example.com", secret: SECRET } },
      "webhook.url: an http or https URL",
    ],
    [
      { webhook: { url: WEBHOOK.url, secret: "hunter2" } },
      expect.stringContaining("webhook.secret"),
    ],
    [{ extra: 1 }, expect.stringContaining("extra")],
    [
      { params: { project: "default", from: "2026-11-21T00:00:00Z" } },
      "params.from: not taken by a rule, which watches its endpoint's value as its interval gives it",
    ],
  ])("refuses %j, naming the rule: %s", (change, problem) => {
    expect(problemOf({ ...STATS_RULE, ...change })).toEqual(problem);
  });

  it("refuses a logs.all rule that fixes a window, and a rule whose name another has", () => {
    const logs = {
      name: "errors",
      endpoint: "logs.all",
      params: { project: "default", since: "1h" },
      condition: { at_least: 1, within: "1m" },
      webhook: WEBHOOK,
    };
    expect(problemOf(logs)).toBe(
      "params.since: not taken by a rule, which counts records from now on",
    );
    expect(() =>
      parseRulesFile("rules.json", JSON.stringify({ rules: [STATS_RULE, STATS_RULE] })),
    ).toThrow('rule 2 ("errors"): another rule has this name');
  });
});

describe("a rules file that is not JSON", () => {
  // Line 4: `      "name": "errors",`, line 8: `        "interval": "1hr"`, line 17: `    }`.
  const rules = JSON.stringify({ rules: [STATS_RULE] }, null, 2);

  it.each([
    ["a comma after the last rule", rules.replace(/}\n {2}]/, "},\n  ]"), 18, 3],
    ["a comma after a rule's last field", rules.replace('>= 10"', '>= 10",'), 12, 7],
    ["single quotes", rules.replace('"errors"', "'errors'"), 4, 15],
    ["a bare word", rules.replace('"1hr"', "hourly"), 8, 21],
    ["a comment", `// alerts\n${rules}`, 1, 1],
    ["a file cut short", rules.slice(0, rules.lastIndexOf("\n  ]")), 17, 6],
  ])("names the line and column, never the text there: %s", (_, text, line, column) => {
    expect(() => parseRulesFile("rules.json", text)).toThrow(
      expect.objectContaining({
        message: `ALERT_RULES_FILE rules.json: not JSON (line ${line}, column ${column})`,
      }),
    );
  });

  it("logs that line on a reload, keeping the rules it had", () => {
    const folder = mkdtempSync(join(tmpdir(), "rules-file-"));
    const path = join(folder, "alert-rules.json");
    writeFileSync(path, rules);
    const file = openAlertRules(path);
    writeFileSync(path, `{"rules": [\n  {"name": "x", "secret": ${JSON.stringify(SECRET)}},\n]}`);
    const logged: string[] = [];
    file.reload({ info: () => {}, warn: () => {}, error: (_, message) => logged.push(message) });
    file.close();
    expect(logged).toEqual([
      `ALERT_RULES_FILE ${path}: not JSON (line 3, column 1); keeping the previous rules`,
    ]);
    expect(file.value).toHaveLength(1);
  });
});
