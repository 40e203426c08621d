// The methods every path answers. Every route is a GET, answered to HEAD as well (RFC 9110 §9.3.2:
// the GET's status and headers, ETag included, and no body; Fastify's exposeHeadRoutes runs the GET's
// handler and drops the body), and OPTIONS is the CORS preflight (cors.ts). Any other method on a
// routed path is 405 with Allow in the envelope, in the scope the GET is in (so behind the
// credential where the GET is): a path no route serves stays 404.
import type { FastifyInstance, RouteOptions } from "fastify";
import fp from "fastify-plugin";
import { HttpError } from "./errors.ts";

/** What every routed path answers. */
export const ALLOWED_METHODS = "GET, HEAD";

/** What a routed path answers otherwise than with 405: OPTIONS is the preflight's. */
const SERVED_METHODS = ["GET", "HEAD", "OPTIONS"];

const isGet = ({ method }: RouteOptions) => [method].flat().includes("GET");

/** Before any route: each GET route's path refuses the other methods with 405. */
export const methodNotAllowed = fp(async (app: FastifyInstance) => {
  app.addHook("onRoute", function (route) {
    if (!isGet(route)) return;
    // Registered where the GET is (its prefix and hooks): the path as that scope names it.
    this.route({
      // Every other method Fastify routes: POST, PUT, PATCH, DELETE, TRACE (and QUERY, which
      // Fastify refuses without a body, and requestShape with one).
      method: this.supportedMethods.filter((method) => !SERVED_METHODS.includes(method)),
      url: route.routePath,
      handler: async (request, reply) => {
        reply.header("allow", ALLOWED_METHODS);
        throw new HttpError(
          "method_not_allowed",
          `${request.method} is not served here; this path answers ${ALLOWED_METHODS}.`,
        );
      },
    });
  });
});
