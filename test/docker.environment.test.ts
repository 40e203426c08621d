// The Dockerfile and the compose files, read as Docker would (no Docker engine runs here), and what
// the image holds, installed and run as the Dockerfile does it.
import { readFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ConfigError, loadConfig } from "../src/config.ts";
import {
  copyOfCheckout,
  newcomerEnv,
  newcomerPath,
  ROOT,
  runToEnd,
  startServer,
  trackedFiles,
} from "./support/newcomer.ts";

const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const dockerfile = read("Dockerfile");
const instructions = (name: string) =>
  [...dockerfile.matchAll(new RegExp(`^${name} (.+)$`, "gm"))].map(([, args = ""]) => args);
/** Where the image keeps the cursor secret it makes without CURSOR_SECRET. */
const secretFolder = dirname(/^ENV CURSOR_SECRET_FILE=(\/\S+)$/m.exec(dockerfile)?.[1] ?? ".");
/** The sources of the COPY instructions that take files from the build context. */
const copiedFromContext = instructions("COPY")
  .filter((args) => !args.startsWith("--from"))
  .flatMap((args) => args.split(" ").slice(0, -1));

describe("Dockerfile", () => {
  it("builds from the Node minor version that the `node` package pins", () => {
    const { devDependencies } = JSON.parse(read("package.json")) as {
      devDependencies: Record<string, string>;
    };
    const minor = devDependencies.node?.split(".").slice(0, 2).join(".");
    const bases = instructions("FROM").map((args) => args.split(" ")[0]);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toMatch(new RegExp(`^node:${minor}-`));
  });

  it("keeps the cursor secret it makes without CURSOR_SECRET in a folder the node user owns", () => {
    const folder = secretFolder;
    expect(folder).toMatch(/^\/data\//);
    const commands = instructions("RUN")
      .flatMap((args) => args.split("&&"))
      .map((command) => command.trim().split(/\s+/));
    expect(commands).toContainEqual(expect.arrayContaining(["mkdir", folder]));
    expect(commands).toContainEqual(expect.arrayContaining(["chown", "node:node", folder]));
  });

  it("leaves that folder to the named volume the docs' `docker run` mounts, declaring none", () => {
    // An anonymous volume (VOLUME) is new for every `docker run`: it would keep nothing across a deploy.
    expect(instructions("VOLUME").join(" ")).not.toContain(secretFolder);
    const runs = read("docs/operations.md").match(/docker run [^`]+/g) ?? [];
    expect(runs.length).toBeGreaterThan(1);
    for (const run of runs) expect(run).toMatch(new RegExp(`-v [a-z][\\w.-]*:${secretFolder}\\s`));
  });

  it("installs exactly the lockfile's production dependencies", () => {
    expect(instructions("RUN").join("\n")).toMatch(/^npm ci --omit=dev /m);
  });

  it("takes scripts/ into the image, and .dockerignore lets it through", () => {
    expect(copiedFromContext).toContain("scripts");
    expect(read(".dockerignore").split("\n")).not.toContain("scripts");
  });

  it("its files and install run the service and `npm run key` on Node 24", async () => {
    const folder = copyOfCheckout(copiedFromContext.flatMap((source) => filesUnder(source)));
    // The image's Node: this test run's, which is the `node` package's Node 24.
    const env = {
      ...newcomerEnv(),
      PATH: `${dirname(process.execPath)}${delimiter}${newcomerPath()}`,
    };
    const install = await runToEnd(
      "npm",
      ["ci", "--omit=dev", "--prefer-offline", "--no-audit", "--no-fund"],
      folder,
      env,
    );
    expect(install.code, install.stderr).toBe(0);

    const key = await runToEnd(
      "npm",
      ["run", "-s", "key", "--", "--name", "ops", "--scope", "*"],
      folder,
      env,
    );
    expect(key.code, key.stderr).toBe(0);
    expect(key.stdout).toMatch(/"sha256": ?"[0-9a-f]{64}"/);

    const service = await startServer(process.execPath, ["src/main.ts"], folder, {
      ...env,
      NODE_ENV: "production",
      PORT: "0",
      API_KEYS: "docker-test-key-0123456789",
    });
    expect((await fetch(`${service.baseUrl}/health`)).status).toBe(200);
    service.stop();
  }, 180_000);
});

/** The files git tracks at or under `path`. */
function filesUnder(path: string): string[] {
  return trackedFiles().filter((file) => file === path || file.startsWith(`${path}/`));
}

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}
const compose = parse(read("docker-compose.yml"), { merge: true }) as ComposeFile;
const demo = parse(read("docker-compose.demo.yml"), { merge: true }) as ComposeFile;
const SHELL = { API_KEYS: "compose-test-key-0123456789", CURSOR_SECRET: "c".repeat(32) };

/** A replica's environment as Compose hands it over, from `shell`'s variables. */
function interpolated(environment: Record<string, string> = {}, shell: Record<string, string>) {
  // ${NAME:-default}, ${NAME:?error} and ${NAME:+replacement}: the forms the compose files use.
  const value = (text: string) =>
    text.replace(/\$\{(\w+)(?::([-?+])([^}]*))?\}/g, (_, name: string, form = "", word = "") => {
      const set = (shell[name] ?? "") !== "";
      if (form === "?" && !set) throw new Error(`${name}: ${word}`);
      if (form === "+") return set ? word : "";
      return set ? (shell[name] as string) : form === "-" ? word : "";
    });
  return Object.fromEntries(Object.entries(environment).map(([name, text]) => [name, value(text)]));
}

describe("docker-compose.yml", () => {
  const replicas = compose.services["log-query"] as Service;

  it("runs the replicas on BigQuery, with neither demo data nor LOCAL_DATA", () => {
    expect(Object.keys(compose.services)).not.toContain("demo-data");
    expect(replicas.volumes).toBeUndefined();
    const environment = interpolated(replicas.environment, {
      ...SHELL,
      BIGQUERY_PROJECT_ID: "acme",
      BIGQUERY_DATASET: "logs",
    });
    expect(environment).not.toHaveProperty("LOCAL_DATA");
    expect(loadConfig(environment).engine).toMatchObject({
      kind: "bigquery",
      projectId: "acme",
      dataset: "logs",
    });
  });

  it("gives the replicas the one CURSOR_SECRET they share, so no state volume: a file would be each one's own", () => {
    const { CURSOR_SECRET: _, ...shell } = SHELL;
    expect(() => interpolated(replicas.environment, shell)).toThrow(/^CURSOR_SECRET: /);
    for (const file of [compose, demo]) {
      expect(JSON.stringify(file.services)).not.toContain(secretFolder);
    }
  });

  it("stops the replicas with the missing variable's name when no BigQuery project is set", () => {
    const environment = interpolated(replicas.environment, SHELL);
    expect(() => loadConfig(environment)).toThrow(
      new ConfigError("BIGQUERY_PROJECT_ID: required for the bigquery engine"),
    );
  });
});

describe("docker-compose.demo.yml", () => {
  const { "demo-data": demoData, "log-query": replicas } = demo.services as Record<string, Service>;
  const folder = /^exports:(\/[^:]+)$/.exec(demoData?.volumes?.[0] ?? "")?.[1];

  it("fills one exports volume with demo logs once, before the replicas start", () => {
    expect(demoData?.command).toEqual(["node", "src/demo-exports.ts", folder]);
    expect(demo.volumes).toHaveProperty("exports");
    expect(replicas?.volumes).toEqual([`exports:${folder}:ro`]);
    expect(replicas?.depends_on).toEqual({
      "demo-data": { condition: "service_completed_successfully" },
    });
  });

  it("turns docker-compose.yml's replicas to the embedded engine over that volume", () => {
    // Compose merges an added file's environment into the first one's, name by name.
    const environment = interpolated(
      { ...compose.services["log-query"]?.environment, ...replicas?.environment },
      SHELL,
    );
    expect(loadConfig(environment).engine).toMatchObject({ kind: "duckdb", localData: folder });
  });
});
