// The rules file docs/watching.md shows, run as written against npm start's demo data: it fires,
// and its webhook's signature verifies under the secret it gives.
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
    await start({
      API_KEYS: "docs-example-key-0123456789",
      ALERT_RULES_FILE: temporaryFile("alert-rules.json", example?.text),
    });
    await receiver.until(1);
    const [delivery] = receiver.received;
    const message = new Webhook(first.webhook.secret).verify(
      delivery?.body as string,
      delivery?.headers as Record<string, string>,
    );
    expect(message).toMatchObject({ type: "alert.firing", data: { rule: first.name } });
  }, 60_000);
});
