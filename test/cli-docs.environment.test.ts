// The docs' log-query commands run as written, with log-query put on the PATH by `npm link` (an
// install: an environment test), against npm start's service; the crontab line exports.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { codeBlocks, docFiles, runShell, shellCommands } from "./support/doc-commands.ts";
import { ids, KEY } from "./support/log-query.ts";
import { start } from "./support/service-process.ts";

describe("the docs' log-query commands, run as written", () => {
  it("npm link puts log-query on the PATH; each line answers from npm start's service; the crontab line exports", async () => {
    const { baseUrl } = await start({ API_KEYS: KEY });
    const prefix = mkdtempSync(join(tmpdir(), "npm-prefix-"));
    const link = await runShell("npm link", { npm_config_prefix: prefix });
    expect(link.code, link.stderr).toBe(0);
    const env = {
      KEY,
      LOG_QUERY_URL: baseUrl,
      LOG_QUERY_KEY: "",
      PATH: `${join(prefix, "bin")}:${process.env.PATH}`,
    };
    const setKey = shellCommands().find(({ text }) => text.startsWith("export LOG_QUERY_KEY="));
    const lines = shellCommands().filter(({ text }) => text.startsWith("log-query "));
    expect(lines.length).toBeGreaterThan(3);
    for (const { file, line, text } of lines) {
      const cwd = mkdtempSync(join(tmpdir(), "log-query-doc-"));
      const ran = await runShell(`${setKey?.text}\n${text}`, env, { cwd, timeoutMs: 60_000 });
      expect({ where: `${file}:${line}`, code: ran.code, stderr: ran.stderr }).toEqual({
        where: `${file}:${line}`,
        code: 0,
        stderr: "",
      });
      expect(ran.stdout.length + (existsSync(join(cwd, "logs.ndjson")) ? 1 : 0)).toBeGreaterThan(0);
    }

    const [crontab] = docFiles().flatMap((file) =>
      codeBlocks(file).filter((b) => b.lang === "crontab"),
    );
    const command = crontab?.text.trim().split(/\s+/).slice(5).join(" ") as string;
    const home = mkdtempSync(join(tmpdir(), "cron-home-"));
    mkdirSync(join(home, "log-export"));
    writeFileSync(join(home, "log-export", "key"), `${KEY}\n`, { mode: 0o600 });
    for (let run = 0; run < 2; run++) {
      const ran = await runShell(command, { ...env, HOME: home });
      expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
    }
    const state = JSON.parse(readFileSync(join(home, "log-export", "state.json"), "utf8"));
    expect(state).toMatchObject({ cursor: expect.any(String), outBytes: expect.any(Number) });
    expect(
      ids(readFileSync(join(home, "log-export", "logs.ndjson"), "utf8")).length,
    ).toBeGreaterThan(0);
  }, 180_000);
});
