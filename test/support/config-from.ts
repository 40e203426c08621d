// The service's settings for a test or a bench: the config schema's defaults with the few a test
// names changed (config.ts's configFrom), and four engine slots unless it says otherwise.
import { type Config, type ConfigOverrides, configFrom as fromDefaults } from "../../src/config.ts";

export type { ConfigOverrides };

export function configFrom(overrides: ConfigOverrides = {}): Config {
  // The embedded engine's default runs one query per core: tests run with four whatever the
  // machine, so that what they see of queueing does not depend on its cores.
  return fromDefaults({ ...overrides, admission: { maxConcurrency: 4, ...overrides.admission } });
}
