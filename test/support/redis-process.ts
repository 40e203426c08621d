// A real redis-server (Debian's package; `npm test` installs it when missing) on a free loopback
// port, without persistence. kill() is a crash (SIGKILL) and start() brings it back empty on the same
// port: what replicas see when their Redis restarts; pause() (SIGSTOP) makes it hang, as a Redis that
// answers late. Plain Node, so that bench/ can start one too.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { freePort } from "./free-port.ts";

export interface RedisServer {
  port: number;
  url: string;
  start(): Promise<void>;
  kill(): Promise<void>;
  /** Stops the process without ending it: connections stay open, nothing is answered. */
  pause(): void;
  resume(): void;
}

/** A redis-server on a free port; start() starts it. */
export async function redisOnFreePort(): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      const started = spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      child = started;
      let output = "";
      await new Promise<void>((resolve, reject) => {
        started.once("error", reject);
        started.once("exit", (code) =>
          reject(new Error(`redis-server exited (${code}): ${output}`)),
        );
        started.stdout?.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes("Ready to accept connections")) resolve();
        });
      });
    },
    pause() {
      child?.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    async kill() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null) return;
      running.kill("SIGCONT");
      const exited = once(running, "exit");
      running.kill("SIGKILL");
      await exited;
    },
  };
}
