// The project as a newcomer meets it: a fresh folder holding the files git tracks (no node_modules),
// a shell whose `node` is the machine's own rather than the npm script's node_modules/.bin/node, and
// the npm of their choice. Folders are removed, and processes killed, after the test file.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const folders: string[] = [];
const groups: ChildProcess[] = [];
afterAll(() => {
  for (const child of groups.splice(0)) killGroup(child);
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A new folder holding `files` (paths relative to the repository; all that git tracks unless given). */
export function copyOfCheckout(files: string[] = trackedFiles()): string {
  const folder = mkdtempSync(join(tmpdir(), "newcomer-"));
  folders.push(folder);
  for (const file of files) {
    mkdirSync(dirname(join(folder, file)), { recursive: true });
    cpSync(join(ROOT, file), join(folder, file));
  }
  return folder;
}

/** The files git tracks, as they are in the working tree (a deleted one left out). */
export function trackedFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "" && existsSync(join(ROOT, file)));
}

/**
 * A newcomer's environment: their home (npm's cache and settings), PATH and the certificates their
 * machine trusts (a registry behind a proxy with its own CA), nothing of npm test's.
 */
export function newcomerEnv(): Record<string, string | undefined> {
  const { HOME, NODE_EXTRA_CA_CERTS } = process.env;
  return { HOME, PATH: newcomerPath(), ...(NODE_EXTRA_CA_CERTS && { NODE_EXTRA_CA_CERTS }) };
}

/** PATH without the node_modules/.bin folders npm put first for this test run. */
export function newcomerPath(): string {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter((folder) => !folder.split(sep).includes("node_modules"))
    .join(delimiter);
}

/** A Node older than 24: the first on the newcomer's PATH, else Node 20 from the `node` package. */
export function olderNode(): string {
  for (const folder of newcomerPath().split(delimiter)) {
    const node = join(folder, "node");
    if (existsSync(node) && majorVersion(node) < 24) return node;
  }
  return execFileSync("npx", ["-y", "node@20", "-p", "process.execPath"], {
    env: newcomerEnv(),
    encoding: "utf8",
  }).trim();
}

export function majorVersion(node: string): number {
  return Number(execFileSync(node, ["-p", "process.versions.node.split('.')[0]"]).toString());
}

/** Runs `command` in `cwd` to its end; its exit code and output. */
export async function runToEnd(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  // "close": once the output is read to its end too, which "exit" may come before.
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stdout, stderr };
}

/**
 * Starts a server in a process group of its own (npm and npx start it through a shell) and resolves
 * with its address once it logs that it listens; the group is killed by stop() or after the file.
 */
export function startServer(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string | undefined>,
): Promise<{ baseUrl: string; stop: () => void }> {
  const child = spawn(command, args, {
    cwd,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  groups.push(child);
  let output = "";
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk;
      const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (listening) resolve({ baseUrl: listening[1] as string, stop: () => killGroup(child) });
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.once("exit", (code) => reject(new Error(`${command} exited ${code}: ${output}`)));
  });
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group has ended already.
  }
}
