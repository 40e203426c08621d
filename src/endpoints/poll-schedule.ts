// When each follow feed polls: once per interval, at a phase of its own drawn at random, from one
// timer, so that feeds made together do not all query the engine at the same instant.

/** What the schedule polls. */
export interface Polled {
  poll(): Promise<void>;
}

export class PollSchedule<T extends Polled> {
  private readonly due = new Map<T, number>();
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(intervalMs: number) {
    this.intervalMs = intervalMs;
  }

  add(feed: T): void {
    this.due.set(feed, Date.now() + Math.random() * this.intervalMs);
    this.arm();
  }

  delete(feed: T): void {
    this.due.delete(feed);
    if (this.due.size === 0) this.clear();
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  private arm(): void {
    clearTimeout(this.timer);
    let next = Number.POSITIVE_INFINITY;
    for (const at of this.due.values()) next = Math.min(next, at);
    if (next === Number.POSITIVE_INFINITY) return;
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - Date.now()));
  }

  private tick(): void {
    const now = Date.now();
    for (const [feed, at] of this.due) {
      if (at > now) continue;
      // A late tick is not made up for: the next poll is an interval from now.
      this.due.set(feed, Math.max(at + this.intervalMs, now));
      void feed.poll();
    }
    this.arm();
  }
}
