// The service as a newcomer starts it (`npm start`'s command, embedded engine, demo data), asked
// the curl examples of README.md.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";

const KEY = "start-test-key-0123456789";
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

interface Started {
  child: ChildProcess;
  baseUrl: string;
  stderr: () => string;
}

function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ["src/main.ts"], {
    env: { PATH: process.env.PATH, PORT: "0", LOG_LEVEL: "info", ...env },
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
      if (listening) resolve({ child, baseUrl: listening[1] as string, stderr: () => stderr });
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
}

/** The `curl` examples of README.md that call an endpoint with $KEY. */
function readmeExamples(): string[] {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  return [
    ...readme.matchAll(
      /curl -s -H "X-API-KEY: \$KEY" "http:\/\/127\.0\.0\.1:3000(\/api\/endpoints\/[^"]+)"/g,
    ),
  ].map((m) => m[1] as string);
}

describe("npm start", () => {
  it("answers the README's three curl examples with rows from the demo data", async () => {
    const examples = readmeExamples().slice(0, 3);
    expect(examples.map((path) => path.split("?")[0])).toEqual([
      "/api/endpoints/functions.invocation-stats",
      "/api/endpoints/logs.all",
      "/api/endpoints/usage.api-counts",
    ]);
    const { baseUrl } = await start({ API_KEYS: KEY });
    for (const path of examples) {
      const response = await fetch(`${baseUrl}${path}`, { headers: { "X-API-KEY": KEY } });
      expect(response.status, path).toBe(200);
      const { result } = (await response.json()) as { result: unknown[] };
      expect(result.length, path).toBeGreaterThan(0);
    }
  });

  it("prints a generated key once, on stderr, and accepts it", async () => {
    const { baseUrl, stderr } = await start({});
    const key = /X-API-KEY: (\S+)/.exec(stderr())?.[1] as string;
    expect(key).toMatch(/^[\w-]{32}$/);
    const response = await fetch(`${baseUrl}/api/endpoints`, { headers: { "X-API-KEY": key } });
    expect(response.status).toBe(200);
  });

  it("stops at a bad setting with one line naming it", async () => {
    const child = spawn(process.execPath, ["src/main.ts"], {
      env: { PATH: process.env.PATH, PORT: "http" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toBe("Configuration error: PORT: expects a port number\n");
  });

  it("closes gracefully on SIGTERM", async () => {
    const { child } = await start({ API_KEYS: KEY });
    const exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    child.kill("SIGTERM");
    expect(await exited).toEqual({ code: 0, signal: null });
  });
});
