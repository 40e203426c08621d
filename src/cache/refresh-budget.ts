// How many recomputations a credential may force a minute (Cache-Control: no-cache / max-age on a
// request): each one costs an engine query, which warming and the shared cache exist to save.
import { LRUCache } from "lru-cache";

const MINUTE_MS = 60_000;

export class RefreshBudget {
  // One window per credential seen recently; credentials are few, the bound guards against churn.
  private readonly windows = new LRUCache<string, { startedAt: number; spent: number }>({
    max: 10_000,
  });
  private readonly perMinute: number;
  private readonly now: () => number;

  constructor(perMinute: number, now: () => number = Date.now) {
    this.perMinute = perMinute;
    this.now = now;
  }

  /** Spends one forced recomputation of `credential` (whose own limit wins); false past the budget. */
  spend(credential: string, ownLimit?: number): boolean {
    const now = this.now();
    let window = this.windows.get(credential);
    if (!window || now - window.startedAt >= MINUTE_MS) {
      window = { startedAt: now, spent: 0 };
      this.windows.set(credential, window);
    }
    if (window.spent >= (ownLimit ?? this.perMinute)) return false;
    window.spent++;
    return true;
  }
}
