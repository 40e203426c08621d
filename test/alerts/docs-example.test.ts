// The rules file docs/watching.md shows, run as written against npm start's demo data: it fires,
// its webhook's signature verifies under the secret it gives, and its message and GET /api/alerts
// have the fields the page shows.
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { codeBlocks } from "../support/doc-commands.ts";
import { start } from "../support/service-process.ts";
import { temporaryFile } from "../support/temporary-file.ts";
import { webhookReceiver } from "../support/webhook-receiver.ts";

interface ExampleRule {
  name: string;
  webhook: { url: string; secret: string };
}

describe("the rules file of docs/watching.md", () => {
  it("fires on the demo data, signed under its secret", async () => {
    const example = codeBlocks("docs/watching.md").find(
      (block) => block.lang === "json" && block.text.includes('"rules"'),
    );
    const { rules } = JSON.parse(example?.text ?? "") as { rules: ExampleRule[] };
    const [first] = rules as [ExampleRule];
    const receiver = await webhookReceiver([], Number(new URL(first.webhook.url).port));
    const key = "docs-example-key-0123456789";
    const { baseUrl } = await start({
      API_KEYS: key,
      ALERT_RULES_FILE: temporaryFile("alert-rules.json", example?.text),
    });
    await receiver.until(1);
    const [delivery] = receiver.received;
    const message = new Webhook(first.webhook.secret).verify(
      delivery?.body as string,
      delivery?.headers as Record<string, string>,
    );
    expect(message).toMatchObject({ type: "alert.firing", data: { rule: first.name } });
    expect(Object.keys((message as { data: object }).data)).toEqual([
      "rule",
      "endpoint",
      "params",
      "condition",
      "state",
      "since",
      "rows",
    ]);

    // GET /api/alerts answers as the page shows it: the same fields, the rule as the file has it.
    const shown = codeBlocks("docs/watching.md").find(
      (block) => block.lang === "json" && block.text.startsWith('{"result"'),
    );
    const [documented] = JSON.parse(shown?.text ?? "").result as Record<string, unknown>[];
    const listedRule = async () => {
      const answer = await fetch(`${baseUrl}/api/alerts`, { headers: { "x-api-key": key } });
      const listed = ((await answer.json()) as { result: Record<string, unknown>[] }).result;
      return listed.find((rule) => rule.name === documented?.name) as Record<string, unknown>;
    };
    await expect.poll(async () => (await listedRule())?.last_delivery).toBeTruthy();
    const actual = await listedRule();
    const shapeOf = (rule: Record<string, unknown>) => ({
      keys: Object.keys(rule),
      delivery: Object.keys(rule.last_delivery as object),
      rule: [rule.endpoint, rule.params, rule.condition, rule.state],
    });
    expect(shapeOf(actual)).toEqual(shapeOf(documented as Record<string, unknown>));
  }, 60_000);
});
