// PID_FILE: the process's id, where an operator's `kill -HUP "$(cat .state/service.pid)"` finds it.
// `npm start`'s own id is npm's, which a SIGHUP stops (leaving the service running without it); this
// file names the service itself. Written once the process handles SIGHUP, removed when it exits.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Writes this process's id to `path`; throws one line naming PID_FILE when it cannot. */
export function writePidFile(path: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, `${process.pid}\n`);
  } catch (error) {
    throw new Error(`PID_FILE: cannot write ${path} (${(error as NodeJS.ErrnoException).code})`);
  }
  // Another process started since (from the same folder) owns the file now: it stays.
  process.once("exit", () => {
    try {
      if (readFileSync(path, "utf8").trim() === String(process.pid)) rmSync(path);
    } catch {
      // Already gone.
    }
  });
}
