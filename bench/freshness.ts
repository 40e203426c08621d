// What the freshness headers (Cache-Status, Server-Timing, Timing-Allow-Origin, X-Bytes-Processed)
// and tracing cost a cached hit: req/s of the same cached key on three services started as `npm start`
// runs them, in alternating rounds of one run: this tree; this tree with tracing on (the default
// sampler, exporting to a receiver in this process); and the commit before the headers, checked out
// into a temporary git worktree that shares this tree's node_modules.
// Run: node bench/freshness.ts [baseline commit] (loopback only, about 2 minutes).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg, platform, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import autocannon from "autocannon";

const BASELINE = process.argv[2] ?? "d38be8f";
const KEY = "bench-key-0123456789abcdef";
const PATH = "/api/endpoints/functions.invocation-stats?project=default&interval=1day";
const ROUNDS = 5;
const ROUND_SECONDS = 3;
const root = resolve(import.meta.dirname, "..");

const receiver = createServer((request, response) => {
  request.resume();
  request.on("end", () =>
    response.writeHead(200, { "content-type": "application/json" }).end("{}"),
  );
});
await new Promise<void>((done) => receiver.listen(0, "127.0.0.1", done));
const collector = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

const baselineTree = mkdtempSync(join(tmpdir(), "freshness-baseline-"));
execFileSync("git", ["-C", root, "worktree", "add", "--detach", baselineTree, BASELINE], {
  stdio: "ignore",
});
symlinkSync(join(root, "node_modules"), join(baselineTree, "node_modules"));

const children: ChildProcess[] = [];
function serve(cwd: string, env: Record<string, string> = {}): Promise<string> {
  const child = spawn(process.execPath, ["src/main.ts"], {
    cwd,
    env: {
      PATH: process.env.PATH,
      PORT: "0",
      API_KEYS: KEY,
      RATE_LIMIT_PER_MINUTE: "1000000000",
      ...env,
    },
    stdio: ["ignore", "pipe", "ignore"],
  });
  children.push(child);
  return new Promise((ready, fail) => {
    let out = "";
    child.stdout?.on("data", (chunk) => {
      out += chunk;
      const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (!listening) return;
      // From now on its request log lines are read and dropped, as a log shipper would take them.
      child.stdout?.removeAllListeners("data").resume();
      ready(listening[1] as string);
    });
    child.once("exit", (code) => fail(new Error(`service exited ${code}`)));
  });
}

try {
  const services = {
    "before the headers": await serve(baselineTree),
    "with the headers": await serve(root),
    "with the headers, tracing on": await serve(root, {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    }),
  };
  for (const base of Object.values(services)) {
    await (await fetch(`${base}${PATH}`, { headers: { "x-api-key": KEY } })).text();
  }
  const rates: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, base] of Object.entries(services)) {
      const result = await autocannon({
        url: `${base}${PATH}`,
        headers: { "x-api-key": KEY },
        connections: 20,
        duration: ROUND_SECONDS,
      });
      if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers were not 200`);
      rates[name] = [...(rates[name] ?? []), result.requests.total / ROUND_SECONDS];
    }
  }
  const total = (name: string) => (rates[name] ?? []).reduce((a, b) => a + b, 0);
  const baseline = total("before the headers");
  console.log(`Machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()}, Node ${process.versions.node}; load average ${loadavg()[0]?.toFixed(1)}.
Cached hit of \`${PATH}\`, 20 connections, ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s per service:

| service | req/s | req/s per round | ÷ before the headers |
| --- | ---: | ---: | ---: |
${Object.keys(services)
  .map((name) => {
    const perRound = rates[name] ?? [];
    return `| ${name} | ${(total(name) / ROUNDS).toFixed(0)} | ${Math.min(...perRound).toFixed(0)}–${Math.max(...perRound).toFixed(0)} | ${(total(name) / baseline).toFixed(3)} |`;
  })
  .join("\n")}`);
} finally {
  for (const child of children) child.kill("SIGKILL");
  receiver.close();
  execFileSync("git", ["-C", root, "worktree", "remove", "--force", baselineTree], {
    stdio: "ignore",
  });
  rmSync(baselineTree, { recursive: true, force: true });
}
