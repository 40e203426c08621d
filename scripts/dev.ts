// `npm run dev`: the service, started again on every change to src/ (the explorer page included),
// endpoints/ or queries/, however the editor saves. Node's --watch follows imported modules only (no SQL, no page
// file), and --watch-path loses a file that a save replaced by renaming a temporary file over it:
// here each folder is watched, not each file, so a new file under an old name is still seen.
import { type ChildProcess, spawn } from "node:child_process";
import { type FSWatcher, readdirSync, statSync, watch } from "node:fs";
import { join } from "node:path";

const WATCHED = ["src", "endpoints", "queries"];
/** One save is several events (write, rename, attributes): the service restarts once for them all. */
const SETTLE_MS = 100;

const watchers = new Map<string, FSWatcher>();
const changed = new Set<string>();
let settle: NodeJS.Timeout | undefined;
let service: ChildProcess | undefined;
let stopping = false;
let quitting = false;

/** Watches `folder` and every folder under it, now and as they are made. */
function watchFolder(folder: string): void {
  if (watchers.has(folder)) return;
  let watcher: FSWatcher;
  try {
    watcher = watch(folder, (_event, name) => onChange(name ? join(folder, name) : folder));
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.isDirectory()) watchFolder(join(folder, entry.name));
    }
  } catch {
    return; // removed meanwhile
  }
  // A removed folder's watch ends with an error; a folder made again under its name is new.
  watcher.on("error", () => {
    watcher.close();
    watchers.delete(folder);
  });
  watchers.set(folder, watcher);
}

function onChange(path: string): void {
  if (isFolder(path)) watchFolder(path);
  changed.add(path);
  clearTimeout(settle);
  settle = setTimeout(restart, SETTLE_MS);
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function startService(): void {
  service = spawn(process.execPath, ["src/main.ts"], { stdio: "inherit" });
  service.once("exit", (code, signal) => {
    service = undefined;
    if (quitting) process.exit(code ?? 1);
    if (!stopping) {
      process.stderr.write(
        `dev: the service stopped (${signal ?? `exit code ${code}`}); it starts again at the next change\n`,
      );
    }
  });
}

/** Stops the service, then starts it on the files as they are now: changes made meanwhile included. */
async function restart(): Promise<void> {
  if (stopping || quitting) return;
  process.stderr.write(`dev: restarting after changes to ${[...changed].sort().join(", ")}\n`);
  const running = service;
  if (running) {
    stopping = true;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    await exited;
    stopping = false;
  }
  // What changed until now, the new service reads: only later changes call for another restart.
  clearTimeout(settle);
  changed.clear();
  startService();
}

/**
 * Stops watching and exits with the service's exit code once it has closed. Ctrl-C's SIGINT reaches
 * the service from the terminal itself (a second signal would cut its graceful close short); a
 * SIGTERM sent to this process alone is passed on.
 */
function quit(signal: NodeJS.Signals): void {
  if (quitting) return;
  quitting = true;
  for (const watcher of watchers.values()) watcher.close();
  clearTimeout(settle);
  if (!service) process.exit(0);
  if (signal === "SIGTERM") service.kill("SIGTERM");
}

for (const folder of WATCHED) watchFolder(folder);
process.on("SIGINT", quit).on("SIGTERM", quit);
startService();
