// How many recomputations a credential may force a minute (Cache-Control: no-cache / max-age on a
// request): each one costs an engine query, which warming and the shared cache exist to save.
import { LRUCache } from "lru-cache";
import type { SharedBudgets } from "../redis/shared-budgets.ts";

const MINUTE_MS = 60_000;

export class RefreshBudget {
  // One window per credential seen recently; credentials are few, the bound guards against churn.
  private readonly windows = new LRUCache<string, { startedAt: number; spent: number }>({
    max: 10_000,
  });
  private readonly perMinute: number;
  private readonly shared: SharedBudgets | undefined;

  /** With `shared` (REDIS_URL), counted once across replicas while Redis answers. */
  constructor(perMinute: number, shared?: SharedBudgets) {
    this.perMinute = perMinute;
    this.shared = shared;
  }

  /** Spends one forced recomputation of `credential` (whose own limit wins); false past the budget. */
  async spend(credential: string, ownLimit?: number): Promise<boolean> {
    const limit = ownLimit ?? this.perMinute;
    const shared = await this.shared?.spend("forced-refresh", credential, limit);
    if (shared !== undefined) return shared;
    const now = Date.now();
    let window = this.windows.get(credential);
    if (!window || now - window.startedAt >= MINUTE_MS) {
      window = { startedAt: now, spent: 0 };
      this.windows.set(credential, window);
    }
    if (window.spent >= limit) return false;
    window.spent++;
    return true;
  }
}
