// One warning line per burst of the same failure, not one per occurrence: a failure after
// `gapMs` without one starts a new burst, whose line counts what the last burst left unsaid.
export class BurstWarning {
  private readonly gapMs: number;
  private last = Number.NEGATIVE_INFINITY;
  private unsaid = 0;

  constructor(gapMs: number) {
    this.gapMs = gapMs;
  }

  /**
   * Counts one occurrence; returns how many went unlogged since the last line when this one is to be
   * logged (0 or more), or undefined while its burst goes on.
   */
  occur(now = Date.now()): number | undefined {
    const starts = now - this.last >= this.gapMs;
    this.last = now;
    if (!starts) {
      this.unsaid++;
      return undefined;
    }
    const unsaid = this.unsaid;
    this.unsaid = 0;
    return unsaid;
  }
}
