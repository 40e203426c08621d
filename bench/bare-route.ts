// The yardstick of bench/hit-profile.ts: a bare Fastify route in a process of its own, replaying
// one answer (its body and headers, from a JSON file) at the path it was given, as fast as Fastify can.
// Run: node bench/bare-route.ts <port> <path> <answer.json>
import { readFileSync } from "node:fs";
import Fastify from "fastify";

const [port, path, answerFile] = process.argv.slice(2) as [string, string, string];
const { body, headers } = JSON.parse(readFileSync(answerFile, "utf8")) as {
  body: string;
  headers: Record<string, string>;
};
const app = Fastify({ logger: false });
app.get(path, (_request, reply) => {
  reply.headers(headers).send(body);
});
await app.listen({ host: "127.0.0.1", port: Number(port) });
process.on("SIGTERM", () => void app.close());
