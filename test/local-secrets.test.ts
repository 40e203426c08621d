// Files with secrets a newcomer keeps in the checkout's root, as the docs' steps make them (a keys
// file, alert rules, PEM keys, an .env) or `npm start` keeps (its cursor secret): git never offers
// to commit them, and `npm run lint` leaves them alone.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copyOfCheckout, ROOT, runToEnd } from "./support/newcomer.ts";

const LOCAL_SECRETS = [
  "keys.json",
  "keys-staging.json",
  "acme.keys.json",
  "jwt-public.pem",
  ".env",
  ".env.local",
  "alert-rules.json",
  "alert-rules-staging.json",
  ".state/cursor-secret",
];

describe("local secrets in the checkout's root", () => {
  it.each(LOCAL_SECRETS)("git ignores %s", (file) => {
    // Exit code 0: ignored; 1: not ignored.
    expect(() =>
      execFileSync("git", ["check-ignore", "--quiet", file], { cwd: ROOT }),
    ).not.toThrow();
  });

  it("Biome's check passes over a keys file written as the docs show it", async () => {
    const folder = copyOfCheckout([".gitignore", "biome.json"]);
    writeFileSync(join(folder, "keys.json"), '{"keys": [\n  {"name": "acme", "sha256": "0"}\n]}\n');
    const biome = join(ROOT, "node_modules", ".bin", "biome");
    const { code, stdout, stderr } = await runToEnd(biome, ["check", "."], folder, process.env);
    expect(code, stdout + stderr).toBe(0);
    expect(stdout).toMatch(/Checked 1 file/); // biome.json
  });
});
