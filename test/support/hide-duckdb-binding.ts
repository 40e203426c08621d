// Loaded with `node --import`: DuckDB's native build cannot be found, as on a platform whose
// optional package npm left out. A fault the real install cannot be made to produce here.
import { registerHooks } from "node:module";

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith("@duckdb/node-bindings-")) {
      throw Object.assign(new Error(`Cannot find module '${specifier}'`), {
        code: "MODULE_NOT_FOUND",
      });
    }
    return nextResolve(specifier, context);
  },
});
