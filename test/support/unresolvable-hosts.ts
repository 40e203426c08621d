// Loaded with `node --import`: host names under .invalid (reserved, RFC 2606) fail to resolve with
// ENOTFOUND at once, without asking a resolver: a DNS failure the test machine cannot otherwise make.
import dns from "node:dns";

const lookup = dns.lookup;
dns.lookup = ((hostname: string, ...rest: unknown[]) => {
  if (!hostname.endsWith(".invalid")) return Reflect.apply(lookup, dns, [hostname, ...rest]);
  const callback = rest.at(-1) as (error: NodeJS.ErrnoException) => void;
  const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
    code: "ENOTFOUND",
    syscall: "getaddrinfo",
    hostname,
  });
  process.nextTick(callback, error);
}) as typeof dns.lookup;
