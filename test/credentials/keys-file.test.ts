// API_KEYS_FILE: what a good file grants, how a bad one is refused at startup (one line naming the
// file, the key entry and the problem), and reloads where a removal always applies and a bad entry
// locks out only its own key.
import {
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createAuthenticator, sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile, KeysFileError } from "../../src/credentials/keys-file.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const ACME_KEY = "acme-key-0123456789abcdef";
const GLOBEX_KEY = "globex-key-0123456789abcdef";

const entry = (name: string, key: string, extra: object = {}) => ({
  name,
  sha256: sha256Hex(key),
  scopes: [{ endpoint: "logs.all", fixed_params: { project: name } }],
  ...extra,
});

const keysFileWith = (content: unknown) => temporaryFile("keys.json", content);

/** Writes the file the way editors do: a new file renamed over the old one. */
function replace(path: string, content: unknown): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(content));
  renameSync(`${path}.tmp`, path);
}

function recordingLog() {
  const lines: { level: string; message: string }[] = [];
  return {
    lines,
    info: (_fields: object, message: string) => lines.push({ level: "info", message }),
    warn: (_fields: object, message: string) => lines.push({ level: "warn", message }),
    error: (_fields: object, message: string) => lines.push({ level: "error", message }),
  };
}

const open: KeysFile[] = [];
afterEach(() => {
  for (const file of open.splice(0)) file.close();
});

/** A keys file holding acme's key, watched (and closed after the test). */
function watchedAcmeFile() {
  const path = keysFileWith({ keys: [entry("acme", ACME_KEY)] });
  const file = new KeysFile(path);
  open.push(file);
  const log = recordingLog();
  file.watch(log);
  return { path, file, log };
}

describe("API_KEYS_FILE", () => {
  it("finds each key by the SHA-256 of the key, with its name, scopes, limit and expiry", () => {
    const path = keysFileWith({
      keys: [
        entry("acme", ACME_KEY, { rate_limit_per_minute: 60, expires_at: "2027-01-01T00:00:00Z" }),
        entry("globex", GLOBEX_KEY),
      ],
    });
    const file = new KeysFile(path);
    expect(file.lookup(sha256Hex(ACME_KEY))).toEqual({
      credential: {
        name: "acme",
        scopes: [{ endpoint: "logs.all", fixed_params: { project: "acme" } }],
        rateLimitPerMinute: 60,
      },
      expiresAt: Date.parse("2027-01-01T00:00:00Z"),
    });
    expect(file.lookup(sha256Hex(GLOBEX_KEY))?.credential.name).toBe("globex");
    expect(file.lookup(sha256Hex("unknown-key-0123456789"))).toBeUndefined();
  });

  it("takes a scope pinning logs.all's filters, an unanchored search_regex among them", () => {
    const fixed = { project: "acme", status: "5xx", search_regex: "timeout|refused" };
    const path = keysFileWith({
      keys: [
        entry("support", ACME_KEY, { scopes: [{ endpoint: "logs.all", fixed_params: fixed }] }),
      ],
    });
    expect(new KeysFile(path).lookup(sha256Hex(ACME_KEY))?.credential.scopes).toEqual([
      { endpoint: "logs.all", fixed_params: fixed },
    ]);
  });

  it.each([
    ["not JSON", "{keys: [", /: not JSON \(/],
    [
      "a raw key",
      { keys: [{ ...entry("acme", ACME_KEY), key: ACME_KEY }] },
      /key 1 \("acme"\): holds a key; the file stores only its sha256/,
    ],
    [
      "a short hash",
      { keys: [{ ...entry("acme", ACME_KEY), sha256: "abc" }] },
      /key 1 \("acme"\) sha256: sha256 must be 64 hex digits/,
    ],
    [
      "an unknown endpoint",
      { keys: [{ ...entry("acme", ACME_KEY), scopes: [{ endpoint: "logs.some" }] }] },
      /key 1 \("acme"\) scopes\.0: no endpoint is named or has the id "logs\.some"/,
    ],
    [
      "a param the endpoint does not take",
      {
        keys: [
          {
            ...entry("acme", ACME_KEY),
            scopes: [{ endpoint: "logs.all", fixed_params: { interval: "1day" } }],
          },
        ],
      },
      /scopes\.0: fixes "interval", which logs\.all takes/,
    ],
    [
      "a value the endpoint refuses",
      {
        keys: [
          {
            ...entry("acme", ACME_KEY),
            scopes: [{ endpoint: "usage.api-counts", fixed_params: { project: "(?<n>x)" } }],
          },
        ],
      },
      /fixes "project" to a value usage\.api-counts refuses: has the named group/,
    ],
    ...[
      ["an unanchored usage pin", "usage.api-counts", "acme"],
      ["a usage pin with an alternation", "usage.api-counts", "^https://acme\\.|staging"],
      ["a * scope pinning project to a ref", "*", "acme"],
    ].map(([name, endpoint, project]): [string, unknown, RegExp] => [
      name as string,
      { keys: [{ ...entry("acme", ACME_KEY), scopes: [{ endpoint, fixed_params: { project } }] }] },
      /fixes "project" to a value usage\.api-counts refuses: a pinned pattern must start with \^ and hold no \|/,
    ]),
    [
      "a name of API_KEYS' keys",
      { keys: [entry("api-key-1", ACME_KEY)] },
      /key 1 \("api-key-1"\) name: names api-key-<n> belong to the keys of API_KEYS/,
    ],
    [
      "no scopes",
      { keys: [{ ...entry("acme", ACME_KEY), scopes: [] }] },
      /scopes: needs at least one scope/,
    ],
    [
      "a repeated name",
      { keys: [entry("acme", ACME_KEY), entry("acme", GLOBEX_KEY)] },
      /key 2 \("acme"\): another key has this name/,
    ],
    [
      "a repeated key",
      { keys: [entry("acme", ACME_KEY), entry("globex", ACME_KEY)] },
      /key 2 \("globex"\): another key has this sha256/,
    ],
    [
      "a bad expiry",
      { keys: [entry("acme", ACME_KEY, { expires_at: "tomorrow" })] },
      /expires_at must be an ISO 8601 time with a zone/,
    ],
  ])(
    "refuses a file with %s, naming the file, the entry and the problem",
    (_case, content, message) => {
      const path = keysFileWith(content);
      const error = (() => {
        try {
          new KeysFile(path);
        } catch (thrown) {
          return thrown as Error;
        }
      })();
      expect(error).toBeInstanceOf(KeysFileError);
      expect(error?.message.startsWith(`API_KEYS_FILE ${path}: `)).toBe(true);
      expect(error?.message).toMatch(message);
      expect(error?.message).not.toContain("\n");
    },
  );

  it("says which endpoints a * scope reaches with its fixed parameter unpinned, naming the key", () => {
    const path = keysFileWith({
      keys: [
        {
          ...entry("acme", ACME_KEY),
          scopes: [{ endpoint: "*", fixed_params: { project_tier: "PRO" } }],
        },
        entry("globex", GLOBEX_KEY),
      ],
    });
    const file = new KeysFile(path);
    // Served, broad as * means: the endpoints without project_tier answer it unpinned.
    expect(file.lookup(sha256Hex(ACME_KEY))?.credential.name).toBe("acme");
    expect(file.warnings).toEqual([
      `API_KEYS_FILE ${path}: key 1 ("acme") scopes.0: * fixes "project_tier", which functions.invocation-stats, usage.api-counts do not take: this key calls them with no project_tier pinned (name the endpoints to scope instead of *)`,
    ]);
  });

  it("refuses a file that cannot be read, naming it", () => {
    expect(() => new KeysFile("/no/such/keys.json")).toThrow(
      "API_KEYS_FILE /no/such/keys.json: cannot be read (ENOENT)",
    );
  });

  it("reloads when the file is replaced; a bad entry refuses its own key, not the others", async () => {
    const { path, file, log } = watchedAcmeFile();

    replace(path, { keys: [entry("acme", ACME_KEY), entry("globex", GLOBEX_KEY)] });
    await vi.waitFor(() => expect(file.lookup(sha256Hex(GLOBEX_KEY))).toBeDefined());

    // globex's entry has a typo, and a new key names an endpoint that does not exist.
    replace(path, {
      keys: [
        entry("acme", ACME_KEY),
        { ...entry("globex", GLOBEX_KEY), rate_limit_per_minute: "60" },
        { ...entry("initech", "initech-key-0123456789abcdef"), scopes: [{ endpoint: "nope" }] },
      ],
    });
    await vi.waitFor(() => expect(file.lookup(sha256Hex(GLOBEX_KEY))).toBeUndefined());
    expect(log.lines.filter((line) => line.level === "error").map((line) => line.message)).toEqual([
      expect.stringMatching(
        /^API_KEYS_FILE .*keys\.json: key 2 \("globex"\) rate_limit_per_minute: .*; that key is refused$/,
      ),
      expect.stringMatching(
        /^API_KEYS_FILE .*keys\.json: key 3 \("initech"\) scopes\.0: no endpoint is named or has the id "nope"; that key is refused$/,
      ),
    ]);
    expect(file.lookup(sha256Hex(ACME_KEY))?.credential.name).toBe("acme");
  });

  it("on a reload of a file that does not parse, keeps only the previous keys it still holds", async () => {
    const { path, file, log } = watchedAcmeFile();
    replace(path, { keys: [entry("acme", ACME_KEY), entry("globex", GLOBEX_KEY)] });
    await vi.waitFor(() => expect(file.lookup(sha256Hex(GLOBEX_KEY))).toBeDefined());

    // globex's entry deleted, and a comma left behind: a revocation still, whatever else it holds.
    writeFileSync(path, `{"keys": [${JSON.stringify(entry("acme", ACME_KEY))},]}`);
    await vi.waitFor(() => expect(file.lookup(sha256Hex(GLOBEX_KEY))).toBeUndefined());
    expect(file.lookup(sha256Hex(ACME_KEY))?.credential.name).toBe("acme");
    expect(log.lines.find((line) => line.level === "error")?.message).toMatch(
      /^API_KEYS_FILE .*keys\.json: not JSON .*; keeping the previous keys it still holds \(1 no longer in it refused\)$/,
    );
  });

  it("reloads when kubelet swaps a mounted ConfigMap's or Secret's ..data symlink", async () => {
    // kubelet's layout: keys.json -> ..data/keys.json, ..data -> a timestamped folder. An update
    // writes a new folder, points ..data_tmp at it, renames ..data_tmp over ..data and removes
    // the old folder: nothing named keys.json is ever written.
    const mount = dirname(keysFileWith({ keys: [] }));
    const writeVersion = (stamp: string, content: unknown) => {
      mkdirSync(join(mount, stamp));
      writeFileSync(join(mount, stamp, "keys.json"), JSON.stringify(content));
      symlinkSync(stamp, join(mount, "..data_tmp"));
      renameSync(join(mount, "..data_tmp"), join(mount, "..data"));
    };
    rmSync(join(mount, "keys.json"));
    writeVersion("..2026_11_25_10_00_00.000000001", { keys: [entry("acme", ACME_KEY)] });
    symlinkSync("..data/keys.json", join(mount, "keys.json"));
    const file = new KeysFile(join(mount, "keys.json"));
    open.push(file);
    file.watch(recordingLog());

    writeVersion("..2026_11_25_10_05_00.000000002", { keys: [entry("globex", GLOBEX_KEY)] });
    rmSync(join(mount, "..2026_11_25_10_00_00.000000001"), { recursive: true });

    await vi.waitFor(() => expect(file.lookup(sha256Hex(ACME_KEY))).toBeUndefined());
    expect(file.lookup(sha256Hex(GLOBEX_KEY))?.credential.name).toBe("globex");
  });

  it("takes a change at its next look, at most 250 ms after the first rewrite, however often rewritten", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const { path, file } = watchedAcmeFile();
      // Rewritten every 30 ms from the moment it was watched: the look at 250 ms takes it.
      for (let at = 0; at < 240; at += 30) {
        replace(path, { keys: [entry("globex", GLOBEX_KEY)] });
        vi.advanceTimersByTime(30);
      }
      replace(path, { keys: [entry("globex", GLOBEX_KEY)] });
      vi.advanceTimersByTime(10);
      expect(file.lookup(sha256Hex(ACME_KEY))).toBeUndefined();
      expect(file.lookup(sha256Hex(GLOBEX_KEY))?.credential.name).toBe("globex");
    } finally {
      vi.useRealTimers();
    }
  });

  it("takes a revocation while the file is still being rewritten every 30 ms", async () => {
    const { path, file } = watchedAcmeFile();
    // A reload that waits for the writes to settle would wait for all 100 of them (3 s).
    let rewrites = 0;
    while (rewrites < 100 && file.lookup(sha256Hex(ACME_KEY))) {
      replace(path, { keys: [entry("globex", GLOBEX_KEY)] });
      rewrites++;
      await sleep(30);
    }
    expect(file.lookup(sha256Hex(ACME_KEY))).toBeUndefined();
    expect(rewrites).toBeLessThan(100);
  });

  it("takes a same-size rewrite that left the recent stamp as it was, as a coarse clock does", async () => {
    const { path, file } = watchedAcmeFile();
    // A whole second, so the stamp put back below is the same to the nanosecond; the next one, so
    // it stays recent however slowly the test runs.
    const stamp = Math.ceil(Date.now() / 1000);
    utimesSync(path, stamp, stamp);
    await sleep(300);
    const ajax = { keys: [entry("ajax", GLOBEX_KEY)] };
    expect(JSON.stringify(ajax).length).toBe(readFileSync(path, "utf8").length);
    writeFileSync(path, JSON.stringify(ajax));
    utimesSync(path, stamp, stamp);
    await vi.waitFor(() =>
      expect(file.lookup(sha256Hex(GLOBEX_KEY))?.credential.name).toBe("ajax"),
    );
  });

  it("tells onChange listeners after each reload, until they unsubscribe", () => {
    const { path, file, log } = watchedAcmeFile();
    const calls: string[] = [];
    const unsubscribe = file.onChange(() => calls.push("first"));
    file.onChange(() => calls.push("second"));

    writeFileSync(path, JSON.stringify({ keys: [entry("globex", GLOBEX_KEY)] }));
    file.reload(log);
    expect(calls).toEqual(["first", "second"]);

    // A bad file is taken too: what it no longer holds is revoked.
    writeFileSync(path, "{keys: [");
    file.reload(log);
    expect(calls).toEqual(["first", "second", "first", "second"]);
    expect(file.lookup(sha256Hex(GLOBEX_KEY))).toBeUndefined();

    unsubscribe();
    writeFileSync(path, JSON.stringify({ keys: [entry("acme", ACME_KEY)] }));
    file.reload(log);
    expect(calls).toEqual(["first", "second", "first", "second", "second"]);
  });

  it("still calls the other onChange listeners when one throws, and logs it", () => {
    const { file, log } = watchedAcmeFile();
    file.onChange(() => {
      throw new Error("listener bug");
    });
    let called = false;
    file.onChange(() => {
      called = true;
    });
    file.reload(log);
    expect(called).toBe(true);
    expect(log.lines.at(-1)).toEqual({
      level: "error",
      message: "API_KEYS_FILE change listener failed",
    });
  });
});

const FULL_KEY = "full-key-0123456789abcdef";
const EXPIRY = "2027-01-01T00:00:00Z";

function authenticatorOverFile() {
  const path = temporaryFile("keys.json", {
    keys: [entry("acme", ACME_KEY, { expires_at: EXPIRY }), entry("globex", GLOBEX_KEY)],
  });
  const keysFile = new KeysFile(path);
  open.push(keysFile);
  const clock = { now: Date.parse(EXPIRY) - 1_000 };
  const authenticate = createAuthenticator({
    apiKeys: [FULL_KEY],
    keysFile,
    now: () => clock.now,
  });
  const nameOf = (secret: string, connection: object) => {
    const found = authenticate(secret, connection);
    if (typeof found === "function") throw new Error("a key, not a token, was expected");
    return found.name;
  };
  return { path, keysFile, clock, nameOf };
}

// A key a kept-alive connection presents again is accepted without its hash: a reload's revocation,
// an expiry and another key on the same connection still apply at once, as on its first request.
describe("a connection presenting a key it had accepted", () => {
  it("loses it at the reload that revokes it", () => {
    const { path, keysFile, nameOf } = authenticatorOverFile();
    const connection = {};
    expect(nameOf(GLOBEX_KEY, connection)).toBe("globex");
    expect(nameOf(GLOBEX_KEY, connection)).toBe("globex");

    writeFileSync(path, JSON.stringify({ keys: [entry("acme", ACME_KEY)] }));
    keysFile.reload(recordingLog());
    expect(() => nameOf(GLOBEX_KEY, connection)).toThrow("Invalid API key.");
    // A full-access key (API_KEYS) outlives a reload of the keys file.
    expect(nameOf(FULL_KEY, connection)).toBe("api-key-1");
    keysFile.reload(recordingLog());
    expect(nameOf(FULL_KEY, connection)).toBe("api-key-1");
  });

  it("loses it when it expires", () => {
    const { clock, nameOf } = authenticatorOverFile();
    const connection = {};
    expect(nameOf(ACME_KEY, connection)).toBe("acme");
    expect(nameOf(ACME_KEY, connection)).toBe("acme");
    clock.now = Date.parse(EXPIRY);
    expect(() => nameOf(ACME_KEY, connection)).toThrow(
      `This API key expired at 2027-01-01T00:00:00.000Z.`,
    );
  });

  it("is refused a near miss of it, and answered for another key as that key", () => {
    const { nameOf } = authenticatorOverFile();
    const connection = {};
    expect(nameOf(ACME_KEY, connection)).toBe("acme");
    for (const nearMiss of [
      ACME_KEY.slice(0, -1),
      `${ACME_KEY}f`,
      `${ACME_KEY.slice(0, -1)}g`,
      "",
    ]) {
      expect(() => nameOf(nearMiss, connection)).toThrow("Invalid API key.");
    }
    expect(nameOf(GLOBEX_KEY, connection)).toBe("globex");
    expect(nameOf(ACME_KEY, connection)).toBe("acme");
    // Another connection's accepted key is nothing to this one.
    expect(nameOf(GLOBEX_KEY, {})).toBe("globex");
  });
});
