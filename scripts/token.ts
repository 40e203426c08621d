// `JWT_SECRET=... npm run token -- --name acme --scope 'logs.all:project=acme' [--ttl 3600]
//   [--rate-limit 120] [--audience <aud>] [--issuer <iss>]`
// Mints an HS256 access token for curl and tests; production backends mint their own (docs/keys.md).
import { SignJWT } from "jose";
import { credentialArgs } from "./credential-args.ts";

const USAGE =
  "usage: JWT_SECRET=<32+ bytes> npm run token -- --name <name> --scope '<endpoint|*>[:<param>=<value>&...]' [--scope ...] [--ttl <seconds, default 3600>] [--rate-limit <n>] [--audience <aud>] [--issuer <iss>]";

const { options, name, scopes, rateLimitPerMinute } = credentialArgs(USAGE, [
  "ttl",
  "audience",
  "issuer",
]);
const secret = process.env.JWT_SECRET ?? "";
const ttl = Number(options.ttl ?? 3600);
if (Buffer.byteLength(secret) < 32 || !(Number.isInteger(ttl) && ttl > 0)) {
  process.stderr.write(
    `${Buffer.byteLength(secret) < 32 ? "JWT_SECRET must hold at least 32 bytes" : "--ttl expects a positive whole number of seconds"}\n\n${USAGE}\n`,
  );
  process.exit(2);
}

let token = new SignJWT({
  scopes,
  ...(rateLimitPerMinute !== undefined && { rate_limit_per_minute: rateLimitPerMinute }),
})
  .setProtectedHeader({ alg: "HS256", typ: "JWT" })
  .setSubject(name)
  .setIssuedAt()
  .setExpirationTime(`${ttl}s`);
if (typeof options.audience === "string") token = token.setAudience(options.audience);
if (typeof options.issuer === "string") token = token.setIssuer(options.issuer);
process.stdout.write(`${await token.sign(new TextEncoder().encode(secret))}\n`);
