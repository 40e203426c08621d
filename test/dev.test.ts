// `npm run dev` as a developer runs it: every save, in place or by renaming a temporary file over the
// old one (as many editors do), of a file under src/ (the explorer page included), endpoints/ or
// queries/ starts the service again. Run on a copy of the project, so the saves touch no file of this checkout.
import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it, vi } from "vitest";

const ROOT = new URL("..", import.meta.url).pathname;
const KEY = "dev-test-key-0123456789abcdef";

let project: string | undefined;
let dev: ChildProcess | undefined;
afterEach(() => {
  // npm, the dev script and the service: the process group the test started.
  if (dev?.pid && dev.exitCode === null) process.kill(-dev.pid, "SIGKILL");
  if (project) rmSync(project, { recursive: true, force: true });
});

/** A copy of what `npm run dev` reads, sharing this checkout's node_modules. */
function copyProject(): string {
  const folder = mkdtempSync(join(tmpdir(), "dev-watch-"));
  for (const entry of ["package.json", "src", "endpoints", "queries", "scripts"]) {
    cpSync(join(ROOT, entry), join(folder, entry), { recursive: true });
  }
  symlinkSync(realpathSync(join(ROOT, "node_modules")), join(folder, "node_modules"));
  return folder;
}

/** An editor's save that writes a temporary file and renames it over the old one. */
function saveByRename(file: string): void {
  const temporary = `${file}.saving`;
  writeFileSync(temporary, readFileSync(file));
  renameSync(temporary, file);
}

it("restarts the service on every save under src/ and endpoints/, in place or by rename", async () => {
  project = copyProject();
  dev = spawn("npm", ["run", "dev"], {
    cwd: project,
    // No demo data to generate: each start is quick.
    env: { PATH: process.env.PATH, PORT: "0", API_KEYS: KEY, LOG_LEVEL: "info", DEMO_DATA: "off" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  dev.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  dev.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  /** The pids of the services that have said they listen, in order. */
  const listening = () =>
    [...output.matchAll(/INFO \((\d+)\): Server listening at/g)].map(([, pid]) => pid);
  await vi.waitFor(() => expect(listening()).toHaveLength(1), { timeout: 20_000, interval: 100 });
  const sql = "endpoints/logs.all/bigquery.sql";
  const saves: [string, (file: string) => void][] = [
    [sql, saveByRename],
    ["src/http/explorer/page/index.html", saveByRename],
    ["src/time.ts", saveByRename],
    // The save Node's --watch-path misses: the file's second replacement.
    [sql, saveByRename],
    ["src/time.ts", (file) => writeFileSync(file, readFileSync(file))],
  ];
  for (const [file, save] of saves) {
    const before = listening().length;
    save(join(project, file));
    // A new service, started after this save, listens.
    await vi.waitFor(() => expect(listening().length, file).toBe(before + 1), {
      timeout: 20_000,
      interval: 100,
    });
  }
  expect(new Set(listening()).size).toBe(listening().length);
}, 150_000);
