// Runs background tasks at most `limit` at a time, in arrival order, so warming never floods the engine.

export class ConcurrencyLimit {
  readonly #limit: number;
  readonly #waiting: Array<() => Promise<void>> = [];
  #running = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit must be a positive integer, got ${limit}`);
    this.#limit = limit;
  }

  /** Queues a task; it must not reject (the caller handles its own errors). */
  run(task: () => Promise<void>): void {
    this.#waiting.push(task);
    this.#pump();
  }

  /** Drops the tasks not yet started; running ones finish on their own. */
  clear(): void {
    this.#waiting.length = 0;
  }

  #pump(): void {
    while (this.#running < this.#limit) {
      const task = this.#waiting.shift();
      if (!task) return;
      this.#running++;
      task().finally(() => {
        this.#running--;
        this.#pump();
      });
    }
  }
}
