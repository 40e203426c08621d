import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { InvalidParamsError, parseParams, withWindowStart } from "../../src/endpoints/params.ts";
import type { SqlParams } from "../../src/engines/sql-params.ts";
import { catalog, endpointNamed, findEndpoint } from "../support/catalog.ts";

const LOGS_WINDOW = endpointNamed("logs.all").paging?.window;

function endpoint(name: string) {
  const found = findEndpoint(name);
  if (!found) throw new Error(`no endpoint ${name}`);
  return found;
}

function parse(name: string, query: Record<string, unknown>): SqlParams {
  return parseParams(endpoint(name).params, query);
}

/** DuckDB's regexp_matches, the embedded engine's use of `project`, with the pattern bound. */
async function duckdbMatches(pattern: string): Promise<boolean> {
  const instance = await DuckDBInstance.create();
  const connection = await instance.connect();
  try {
    const statement = await connection.prepare(
      "SELECT regexp_matches('https://default.supabase.co', $1)",
    );
    statement.bindVarchar(1, pattern);
    return (await statement.runAndReadAll()).getRows()[0]?.[0] as boolean;
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function issues(name: string, query: Record<string, unknown>) {
  try {
    parse(name, query);
  } catch (error) {
    if (error instanceof InvalidParamsError) return error.details;
    throw error;
  }
  throw new Error("expected invalid params");
}

describe("catalog", () => {
  it("holds the three endpoints of docs/api.md with their ids, row caps and cache policies", () => {
    expect(catalog.map((e) => [e.name, e.id, e.maxRows, e.cache])).toEqual([
      [
        "functions.invocation-stats",
        "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c",
        1000,
        { ttlSeconds: 900, warmingSeconds: 300 },
      ],
      ["logs.all", "c4e48f7a-e763-48a3-9217-93a065d845d8", 1000, undefined],
      [
        "usage.api-counts",
        "fa6e0509-d5f7-468e-b429-8c4aecf8563d",
        1000,
        { ttlSeconds: 900, warmingSeconds: 300 },
      ],
    ]);
  });

  it.each(catalog.map((e) => [e.name, e] as const))(
    "%s has an example query string that passes its own validation",
    (_, endpoint) => {
      expect(() => parseParams(endpoint.params, endpoint.example)).not.toThrow();
    },
  );

  it("finds an endpoint by name or by UUID in either case, and nothing else", () => {
    expect(findEndpoint("logs.all")?.name).toBe("logs.all");
    expect(findEndpoint("C4E48F7A-E763-48A3-9217-93A065D845D8")?.name).toBe("logs.all");
    expect(findEndpoint("LOGS.ALL")).toBeUndefined();
    expect(findEndpoint("logs")).toBeUndefined();
  });
});

describe("functions.invocation-stats params", () => {
  it("binds an absent or empty function_id as null", () => {
    expect(parse("functions.invocation-stats", { project: "default", interval: "1hr" })).toEqual({
      project: "default",
      function_id: null,
      interval: "1hr",
    });
    expect(
      parse("functions.invocation-stats", { project: "default", interval: "1hr", function_id: "" })
        .function_id,
    ).toBeNull();
  });

  it("keeps each known interval and normalises any other value to 1day, as the spec's fallback", () => {
    for (const interval of ["5min", "15min", "1hr", "1day", "7day"]) {
      expect(parse("functions.invocation-stats", { project: "p", interval }).interval).toBe(
        interval,
      );
    }
    expect(parse("functions.invocation-stats", { project: "p", interval: "3weeks" }).interval).toBe(
      "1day",
    );
  });

  it("counts a required parameter given empty as missing", () => {
    expect(issues("functions.invocation-stats", { project: "", interval: "" })).toEqual([
      { param: "project", message: expect.stringMatching(/^required: /) },
      {
        param: "interval",
        message: expect.stringMatching(/^required: .*5min, 15min, 1hr, 1day, 7day/),
      },
    ]);
  });

  it("names unknown parameters, such as typos, one detail each", () => {
    expect(issues("functions.invocation-stats", { projct: "p", interval: "1hr", x: "1" })).toEqual([
      { param: "project", message: expect.stringMatching(/^required/) },
      {
        param: "projct",
        message:
          "unknown parameter; this endpoint takes project, function_id, interval, from, to, bucket, max_points",
      },
      {
        param: "x",
        message:
          "unknown parameter; this endpoint takes project, function_id, interval, from, to, bucket, max_points",
      },
    ]);
  });

  it("rejects a parameter given twice", () => {
    expect(issues("functions.invocation-stats", { project: ["a", "b"], interval: "1hr" })).toEqual([
      { param: "project", message: "given more than once; pass it once" },
    ]);
  });
});

describe("logs.all params", () => {
  it("normalises both timestamps to RFC 3339 UTC with microseconds; empty means absent", () => {
    expect(
      parse("logs.all", {
        project: "default",
        project_tier: "PRO",
        iso_timestamp_start: "2026-11-21T07:00:00+02:00",
        iso_timestamp_end: "",
      }),
    ).toEqual({
      project: "default",
      project_tier: "PRO",
      iso_timestamp_start: "2026-11-21T05:00:00.000000Z",
      iso_timestamp_end: null,
      status: null,
      method: null,
      path: null,
      search: null,
      search_regex: null,
      since: null,
      cursor_timestamp: null,
      cursor_id: null,
    });
  });

  const logs = (query: Record<string, string>) =>
    parse("logs.all", { project: "p", project_tier: "FREE", ...query });
  const logsIssues = (query: Record<string, string>) =>
    issues("logs.all", { project: "p", project_tier: "FREE", ...query });

  it("gives the SQL status terms lower case and methods upper case, each once", () => {
    expect(logs({ status: "5XX, 404,5xx" }).status).toBe("5xx,404");
    expect(logs({ method: "get,Post,GET" }).method).toBe("GET,POST");
    expect(logs({ path: "/rest/v1/", search: "100%_\\" })).toMatchObject({
      path: "/rest/v1/",
      search: "100%_\\",
    });
  });

  it.each(["600", "5x", "xx", "5xxx", "50", "abc", "5xx,", "0xx"])(
    "rejects the status term in %j, saying what a term is",
    (status) => {
      expect(logsIssues({ status })).toEqual([
        {
          param: "status",
          message: expect.stringContaining("is not a status code (100 to 599) such as 404"),
        },
      ]);
    },
  );

  it.each(["GET POST", "G3T", "GET;", ""])(
    "takes method %j only when each term is letters",
    (method) => {
      if (method === "") expect(logs({ method }).method).toBeNull();
      else expect(logsIssues({ method })[0]?.param).toBe("method");
    },
  );

  it.each([
    ["90s", "90"],
    ["15m", "900"],
    ["2h", "7200"],
    ["7d", "604800"],
  ])("takes since %j as %s seconds", (since, seconds) => {
    expect(logs({ since }).since).toBe(seconds);
  });

  it.each(["0s", "15", "m", "1.5h", "-5m", "15M", "1w", "01m", " 5m"])(
    "rejects since %j",
    (since) => {
      expect(logsIssues({ since })).toEqual([
        {
          param: "since",
          message:
            "must be a positive whole number and a unit, s, m, h or d: e.g. 90s, 15m, 2h or 7d",
        },
      ]);
    },
  );

  it("refuses since with iso_timestamp_start, naming both", () => {
    expect(logsIssues({ since: "15m", iso_timestamp_start: "2026-11-21T05:00:00Z" })).toEqual([
      { param: "since", message: expect.stringContaining("not both") },
      { param: "iso_timestamp_start", message: expect.stringContaining("not both") },
    ]);
  });

  it("resolves since against now into the start the SQL binds, and leaves it out", () => {
    const now = 1_795_238_262_123_456n;
    const resolved = withWindowStart(LOGS_WINDOW, logs({ since: "15m" }), now);
    expect(resolved.iso_timestamp_start).toBe("2026-11-21T05:02:42.123456Z");
    expect("since" in resolved).toBe(false);
    expect("since" in withWindowStart(LOGS_WINDOW, logs({}), now)).toBe(false);
    // Longer than any retention: the same answer as the longest, and never before year 1.
    const far = withWindowStart(LOGS_WINDOW, logs({ since: "9999999999d" }), now);
    expect(far.iso_timestamp_start).toBe("2024-02-25T05:17:42.123456Z");
  });

  it("keeps project_tier as given: case-sensitive, unknown tiers fall back in the SQL", () => {
    expect(parse("logs.all", { project: "p", project_tier: "pro" }).project_tier).toBe("pro");
  });

  it.each([
    "2026-11-21",
    "2026-11-21T05:00:00",
    "1700000000",
    "2026-13-01T00:00:00Z",
    "now",
    "9999-12-31T23:00:00-02:00",
    "0001-01-01T00:30:00+01:00",
  ])("rejects the timestamp %j with an example of the expected form", (value) => {
    expect(
      issues("logs.all", { project: "p", project_tier: "FREE", iso_timestamp_start: value }),
    ).toEqual([
      {
        param: "iso_timestamp_start",
        message:
          "must be an ISO 8601 timestamp with a zone, e.g. 2026-11-21T05:00:00Z or 2026-11-21T07:00:00+02:00, within years 0001 to 9999 in UTC",
      },
    ]);
  });
});

describe("usage.api-counts params", () => {
  it("accepts an RE2 regex and one of the three intervals", () => {
    expect(
      parse("usage.api-counts", { project: "^https://default\\.", interval: "daily" }),
    ).toEqual({
      project: "^https://default\\.",
      interval: "daily",
    });
  });

  it("rejects an interval outside the table, listing the allowed values", () => {
    expect(issues("usage.api-counts", { project: "p", interval: "weekly" })).toEqual([
      { param: "interval", message: "must be one of minutely, hourly, daily" },
    ]);
  });

  it("rejects a missing or repeated interval like any other parameter", () => {
    expect(issues("usage.api-counts", { project: "p", interval: ["hourly", "daily"] })).toEqual([
      { param: "interval", message: "given more than once; pass it once" },
    ]);
    expect(issues("usage.api-counts", { project: "p" })).toEqual([
      { param: "interval", message: "required: one of minutely, hourly, daily" },
    ]);
  });

  it.each([
    "^https://default\\.",
    "(?i)DEFAULT",
    "(?:abc|def)[0-9]+?",
    "\\Qa.b\\E",
    "\\bdefault\\z",
    "\\p{Greek}+",
    "a{1000}",
    "\\pL{3}",
    "%00\u0000",
    "x".repeat(256),
  ])("accepts %j, which DuckDB's RE2 runs", async (pattern) => {
    expect(parse("usage.api-counts", { project: pattern, interval: "hourly" }).project).toBe(
      pattern,
    );
    await expect(duckdbMatches(pattern)).resolves.toBeTypeOf("boolean");
  });

  it.each([
    ["(", "not a valid RE2 regular expression: error parsing regexp: missing closing )"],
    [
      "(?=lookahead)",
      "not a valid RE2 regular expression: error parsing regexp: invalid or unsupported Perl syntax",
    ],
    [
      "(a)\\1",
      "not a valid RE2 regular expression: error parsing regexp: invalid escape sequence: `\\1`",
    ],
    // C++ RE2 takes \C (any byte); re2js does not, and a URL match never needs it.
    [
      "\\C",
      "not a valid RE2 regular expression: error parsing regexp: invalid escape sequence: `\\C`",
    ],
  ])("rejects %j, which is not RE2 (BigQuery's regex language)", (pattern, message) => {
    expect(issues("usage.api-counts", { project: pattern, interval: "hourly" })).toEqual([
      { param: "project", message: expect.stringContaining(message) },
    ]);
  });

  it("rejects what DuckDB's RE2 cannot run although re2js parses it", async () => {
    for (const pattern of ["(?<ref>default)", "\\pL{1000}"]) {
      expect(issues("usage.api-counts", { project: pattern, interval: "hourly" })).toHaveLength(1);
      await expect(duckdbMatches(pattern)).rejects.toThrow(/invalid perl operator|too large/);
    }
  });

  it.each(["(?<ref>default)", "(?P<ref>default)"])(
    "rejects the named group in %j, which not every engine's RE2 parses, and says what to write",
    (pattern) => {
      expect(issues("usage.api-counts", { project: pattern, interval: "hourly" })).toEqual([
        {
          param: "project",
          message:
            'has the named group "ref", which not every engine accepts; write (…) or (?:…) instead',
        },
      ]);
    },
  );

  it.each(["\\pL{1000}", "\\pL{100}", "(?:[\\pL\\pN]{10}){20}"])(
    "rejects %j, a repeated Unicode class too costly to match every request URL with",
    (pattern) => {
      expect(issues("usage.api-counts", { project: pattern, interval: "hourly" })).toEqual([
        {
          param: "project",
          message: expect.stringMatching(
            /^too costly to run: it compiles to more than 6000 steps, .* use a narrower class such as \[a-z0-9\] or a smaller count$/,
          ),
        },
      ]);
    },
  );

  it("rejects a pattern longer than 256 characters, saying how long it is", () => {
    expect(issues("usage.api-counts", { project: "x".repeat(257), interval: "hourly" })).toEqual([
      {
        param: "project",
        message:
          "longer than 256 characters (257); a pattern such as ^https://default\\. or timeout|refused needs far fewer",
      },
    ]);
  });

  it("gives a value over the general 1024-character limit that one message only", () => {
    expect(issues("usage.api-counts", { project: "x".repeat(1025), interval: "hourly" })).toEqual([
      { param: "project", message: "longer than 1024 characters" },
    ]);
  });

  it("gives a pattern the same verdict every time it is asked", () => {
    for (let i = 0; i < 3; i++) {
      expect(
        issues("usage.api-counts", { project: "\\pL{1000}", interval: "hourly" }),
      ).toHaveLength(1);
      expect(parse("usage.api-counts", { project: "^a", interval: "hourly" }).project).toBe("^a");
    }
  });
});
