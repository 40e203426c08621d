// One way in: every kind of route that names an endpoint — its answer, a watch, a follow stream, the
// alerts listing — asked the same bad questions gives the same answer, and none reaches the engine.
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { startService } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const ADMIN = "admin-key-0123456789abcdef";
/** May call usage.api-counts only. */
const STRANGER = "stranger-key-0123456789abcdef";

const KEYS_PATH = temporaryFile("keys.json", {
  keys: [
    { name: "admin", sha256: sha256Hex(ADMIN), scopes: [{ endpoint: "*" }] },
    { name: "stranger", sha256: sha256Hex(STRANGER), scopes: [{ endpoint: "usage.api-counts" }] },
  ],
});

/**
 * The URL of each route kind for `nameOrId`, with `query` (valid parameters of the endpoint, which
 * the alerts listing does not take) and `extra`.
 */
const KINDS = {
  answer: (nameOrId: string, query: string, extra = "") =>
    `/api/endpoints/${nameOrId}?${query}${extra}`,
  "answer by /query": (nameOrId: string, query: string, extra = "") =>
    `/api/endpoints/query/${nameOrId}?${query}${extra}`,
  watch: (nameOrId: string, query: string, extra = "") =>
    `/api/endpoints/${nameOrId}/watch?${query}${extra}`,
  follow: (nameOrId: string, query: string, extra = "") =>
    `/api/endpoints/${nameOrId}/follow?${query}${extra}`,
  "alerts listing": (nameOrId: string, _query: string, extra = "") =>
    `/api/alerts?${new URLSearchParams({ endpoint: nameOrId })}${extra}`,
};
type Kind = keyof typeof KINDS;

/** The kinds each endpoint has: a watch for a cached one, a follow stream for a followable one. */
const ENDPOINTS: { name: string; id: string; query: string; kinds: Kind[] }[] = [
  {
    name: "functions.invocation-stats",
    id: "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c",
    query: "project=default&interval=1hr",
    kinds: ["answer", "answer by /query", "watch", "alerts listing"],
  },
  {
    name: "logs.all",
    id: "c4e48f7a-e763-48a3-9217-93a065d845d8",
    query: "project=default&project_tier=FREE",
    kinds: ["answer", "answer by /query", "follow", "alerts listing"],
  },
];
const ALL_KINDS = Object.keys(KINDS) as Kind[];

async function service() {
  let runs = 0;
  const counting = (engine: QueryEngine): QueryEngine => ({
    ...engine,
    run: (query) => {
      runs++;
      return engine.run(query);
    },
  });
  const started = await startService({
    now: NOW,
    keysFile: new KeysFile(KEYS_PATH),
    cache: { now: () => 0 },
    config: { cache: { maxEntries: 100, maxBytes: 1_000_000 } },
    wrapEngine: counting,
  });
  return { ...started, runs: () => runs };
}

interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** What each kind answers the question `url` asks; the test then wants them all the same. */
async function ask(
  kinds: readonly Kind[],
  question: (kind: Kind) => [url: string, headers: Record<string, string>],
): Promise<Record<Kind, Refusal>> {
  const { get, runs } = await service();
  const answers = {} as Record<Kind, Refusal>;
  for (const kind of kinds) {
    const response = await get(...question(kind));
    const { code, message } = JSON.parse(response.body).error;
    answers[kind] = { status: response.statusCode, code, message };
  }
  expect(runs()).toBe(0);
  return answers;
}

/** `answers` as a record of one answer for every kind in `kinds`. */
const everyKind = (kinds: readonly Kind[], answer: Refusal) =>
  Object.fromEntries(kinds.map((kind) => [kind, answer]));

const admin = { "x-api-key": ADMIN };

describe("every route kind, asked the same bad question, answers it the same way", () => {
  for (const unknown of ["no.such.endpoint", "00000000-0000-4000-8000-000000000000"]) {
    it(`an unknown endpoint (${unknown}): 404 endpoint_not_found`, async () => {
      const answers = await ask(ALL_KINDS, (kind) => [KINDS[kind](unknown, ""), admin]);
      expect(answers).toEqual(
        everyKind(ALL_KINDS, {
          status: 404,
          code: "endpoint_not_found",
          message: `No endpoint is named or has the id "${unknown}"; GET /api/endpoints lists them.`,
        }),
      );
    });
  }

  for (const { name, id, query, kinds } of ENDPOINTS) {
    for (const [how, nameOrId] of [
      ["by name", name],
      ["by UUID", id],
    ] as const) {
      it(`${name} ${how}, out of the credential's scopes: 403 forbidden`, async () => {
        const answers = await ask(kinds, (kind) => [
          KINDS[kind](nameOrId, query),
          { "x-api-key": STRANGER },
        ]);
        expect(answers).toEqual(
          everyKind(kinds, {
            status: 403,
            code: "forbidden",
            message: `This credential may not call ${name}.`,
          }),
        );
      });
    }

    it(`${name}, with a parameter no route of it takes: 400 invalid_params naming it`, async () => {
      const { get, runs } = await service();
      for (const kind of kinds) {
        const response = await get(KINDS[kind](name, query, "&projct=x"), admin);
        expect(response.statusCode, kind).toBe(400);
        const { error } = JSON.parse(response.body);
        expect(error, kind).toMatchObject({
          code: "invalid_params",
          message: "Some query parameters are invalid; see details.",
        });
        expect(error.details.map(({ param }: { param: string }) => param)).toEqual(["projct"]);
      }
      expect(runs()).toBe(0);
    });

    it(`${name}, with an Accept no route of it gives: 406 not_acceptable`, async () => {
      const answers = await ask(kinds, (kind) => [
        KINDS[kind](name, query),
        { ...admin, accept: "application/xml" },
      ]);
      expect(answers).toEqual(
        everyKind(kinds, {
          status: 406,
          code: "not_acceptable",
          message: "Accept names none of the formats this path gives; available lists them.",
        }),
      );
    });
  }

  it("a format suffix the route kind does not give: 406 not_acceptable, and the formats it does", async () => {
    const { get, runs } = await service();
    const asked: [string, string[]][] = [
      [
        "/api/endpoints/functions.invocation-stats.csv/watch?project=default&interval=1hr",
        ["text/event-stream"],
      ],
      [
        "/api/endpoints/logs.all.json/follow?project=default&project_tier=FREE",
        ["text/event-stream", "application/x-ndjson"],
      ],
      ["/api/alerts?endpoint=logs.all.ndjson", ["application/json"]],
    ];
    for (const [url, available] of asked) {
      const response = await get(url, admin);
      expect(response.statusCode, url).toBe(406);
      const suffix = /\.(csv|json|ndjson)\b/.exec(url)?.[1];
      expect(JSON.parse(response.body), url).toEqual({
        error: {
          code: "not_acceptable",
          message: `The suffix .${suffix} names a format this path does not give; available lists those it does.`,
          available,
        },
      });
    }
    expect(runs()).toBe(0);
  });

  it("an endpoint without the route kind: 404 endpoint_not_found, naming the paths it has", async () => {
    const { get } = await service();
    const watchLogs = await get("/api/endpoints/logs.all/watch?project=default", admin);
    expect(watchLogs.statusCode).toBe(404);
    expect(JSON.parse(watchLogs.body).error).toEqual({
      code: "endpoint_not_found",
      message:
        "logs.all has no /watch path; its paths are /api/endpoints/logs.all, " +
        "/api/endpoints/query/c4e48f7a-e763-48a3-9217-93a065d845d8, /api/endpoints/query/logs.all, " +
        "/api/endpoints/logs.all/follow, /api/endpoints/logs.all/grafana.",
    });
    const followStats = await get(
      "/api/endpoints/query/301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c/follow",
      admin,
    );
    expect(followStats.statusCode).toBe(404);
    expect(JSON.parse(followStats.body).error).toEqual({
      code: "endpoint_not_found",
      message:
        "functions.invocation-stats has no /follow path; its paths are " +
        "/api/endpoints/functions.invocation-stats, " +
        "/api/endpoints/query/301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c, " +
        "/api/endpoints/query/functions.invocation-stats, " +
        "/api/endpoints/functions.invocation-stats/watch, " +
        "/api/endpoints/functions.invocation-stats/grafana.",
    });
  });
});
