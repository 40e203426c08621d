// The service as `npm start` runs it, in a process of its own: started, read and killed by a test.
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach } from "vitest";

export const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

export interface Started {
  child: ChildProcess;
  baseUrl: string;
  stdout: () => string;
  stderr: () => string;
}

const MAIN = new URL("../../src/main.ts", import.meta.url).pathname;

/**
 * Starts `node src/main.ts` with `env`, in `cwd` (default: the checkout, as `npm start`), and
 * resolves once it listens; it is killed after the test.
 */
export function start(
  env: Record<string, string>,
  nodeOptions: string[] = [],
  cwd?: string,
): Promise<Started> {
  const child = spawn(process.execPath, [...nodeOptions, MAIN], {
    env: { PATH: process.env.PATH, PORT: "0", LOG_LEVEL: "info", ...env },
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (listening) {
        resolve({
          child,
          baseUrl: listening[1] as string,
          stdout: () => stdout,
          stderr: () => stderr,
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
}

/** Starts the service expecting it to stop by itself; its exit code and everything it wrote to stderr. */
export async function startAndExit(
  env: Record<string, string>,
  nodeOptions: string[] = [],
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...nodeOptions, MAIN], {
    env: { PATH: process.env.PATH, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stderr };
}
