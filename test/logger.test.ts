import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";

function logFile(): string {
  return join(mkdtempSync(join(tmpdir(), "logger-")), "service.log");
}

function messages(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return text === ""
    ? []
    : text
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line).msg);
}

describe("createLogger", () => {
  it("writes every line whole and in order, whatever its length or characters", () => {
    const file = logFile();
    const log = createLogger({ logLevel: "info", logFormat: "json" }, file);
    const sent = Array.from({ length: 5_000 }, (_, i) => `line ${i} ${"é€😀".repeat(i % 50)}`);
    // Longer than a whole batch, in the middle of the others.
    sent.splice(2_500, 0, "x".repeat(100_000));
    for (const message of sent) log.info(message);
    log.flush();
    expect(messages(file)).toEqual(sent);
  });

  it("writes a line within 100 ms without being asked to flush", async () => {
    const file = logFile();
    const log = createLogger({ logLevel: "info", logFormat: "json" }, file);
    log.info("one line");
    expect(messages(file)).toEqual([]);
    await expect.poll(() => messages(file), { timeout: 1_000, interval: 20 }).toEqual(["one line"]);
  });
});
