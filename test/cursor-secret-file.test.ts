// CURSOR_SECRET_FILE: the cursor secret made once and kept for the next start, private to the
// process's user; a link, another user's file, a file others may read, or one holding no secret
// stops startup in one line.
import { spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { keptCursorSecret } from "../src/cursor-secret-file.ts";
import { startAndExit } from "./support/service-process.ts";

const folder = () => mkdtempSync(join(tmpdir(), "cursor-secret-"));

describe("the kept cursor secret", () => {
  it("is made once, in a folder and file only its user may open, and read again after", () => {
    const path = join(folder(), ".state", "cursor-secret");
    const made = keptCursorSecret(path);
    expect(made).toEqual({ secret: expect.stringMatching(/^[\w-]{43}$/), created: true });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(path, "..")).mode & 0o777).toBe(0o700);
    expect(keptCursorSecret(path)).toEqual({ secret: made.secret, created: false });
    // Nothing left beside it.
    expect(readdirSync(join(path, ".."))).toEqual(["cursor-secret"]);
  });

  it("is the same for processes that start at once on a folder without one", async () => {
    const path = join(folder(), ".state", "cursor-secret");
    const module = new URL("../src/cursor-secret-file.ts", import.meta.url).href;
    const script = `import { keptCursorSecret } from ${JSON.stringify(module)};
      process.stdout.write(keptCursorSecret(process.argv[1]).secret);`;
    const secrets = await Promise.all(
      Array.from({ length: 4 }, () => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script, path]);
        let secret = "";
        child.stdout.on("data", (chunk) => {
          secret += chunk;
        });
        return new Promise((resolve) => child.once("close", () => resolve(secret)));
      }),
    );
    expect(new Set(secrets)).toEqual(new Set([readFileSync(path, "utf8").trim()]));
  });

  it("refuses a file other users may open, one without a secret, and a path under a file", () => {
    const open = join(folder(), "cursor-secret");
    writeFileSync(open, `${"s".repeat(43)}\n`, { mode: 0o644 });
    chmodSync(open, 0o644);
    expect(() => keptCursorSecret(open)).toThrow(
      `CURSOR_SECRET_FILE: ${open} is open to other users (mode 644): chmod 600 it`,
    );
    const short = join(folder(), "cursor-secret");
    writeFileSync(short, "too short\n", { mode: 0o600 });
    expect(() => keptCursorSecret(short)).toThrow(
      `CURSOR_SECRET_FILE: ${short} holds no secret of at least 32 characters`,
    );
    // A file where its folder should be.
    const underFile = join(short, "cursor-secret");
    expect(() => keptCursorSecret(underFile)).toThrow(
      `CURSOR_SECRET_FILE: ${underFile} cannot be read (ENOTDIR)`,
    );
  });

  it("refuses a symbolic link, dangling or to a good file, and follows neither", () => {
    const dangling = join(folder(), "cursor-secret");
    symlinkSync(join(dangling, "..", "nowhere"), dangling);
    expect(() => keptCursorSecret(dangling)).toThrow(
      `CURSOR_SECRET_FILE: ${dangling} is a symbolic link: point CURSOR_SECRET_FILE at a file of its own`,
    );
    expect(existsSync(join(dangling, "..", "nowhere"))).toBe(false);
    // As a Kubernetes Secret mounts a file: a link into ..data. Its value belongs in CURSOR_SECRET.
    const good = join(folder(), "secret");
    writeFileSync(good, "s".repeat(43), { mode: 0o600 });
    const mounted = join(folder(), "cursor-secret");
    symlinkSync(good, mounted);
    expect(() => keptCursorSecret(mounted)).toThrow(`${mounted} is a symbolic link`);
  });

  it.skipIf(process.getuid?.() !== 0)("refuses a private file that another user owns", () => {
    const path = join(folder(), "cursor-secret");
    writeFileSync(path, "s".repeat(43), { mode: 0o600 });
    const nobody = 65534;
    chownSync(path, nobody, nobody);
    expect(() => keptCursorSecret(path)).toThrow(
      `CURSOR_SECRET_FILE: ${path} belongs to uid ${nobody}, not to this process's user (uid 0): chown it`,
    );
  });

  it("stops startup in one line naming the variable when the file is unusable", async () => {
    const path = join(folder(), "cursor-secret");
    writeFileSync(path, "s".repeat(43), { mode: 0o640 });
    chmodSync(path, 0o640);
    const { code, stderr } = await startAndExit({
      API_KEYS: "x".repeat(16),
      CURSOR_SECRET_FILE: path,
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^Configuration error: CURSOR_SECRET_FILE: \S+ is open to other users \(mode 640\)[^\n]*\n$/,
    );
    const dangling = join(folder(), "cursor-secret");
    symlinkSync(join(dangling, "..", "nowhere"), dangling);
    const link = await startAndExit({ API_KEYS: "x".repeat(16), CURSOR_SECRET_FILE: dangling });
    expect(link.code).toBe(1);
    expect(link.stderr).toBe(
      `Configuration error: CURSOR_SECRET_FILE: ${dangling} is a symbolic link: point CURSOR_SECRET_FILE at a file of its own (for a Kubernetes Secret, whose files are links, give it as CURSOR_SECRET instead)\n`,
    );
  });
});
