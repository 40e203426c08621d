// Background work on a timer, one run at a time: a run that outlasts the interval is not stacked
// behind, and stopping waits for the run under way.

export interface Repeated {
  /** Runs the work now (after the one under way, if any). */
  run(): Promise<void>;
  /** No run starts after this; resolves once the one under way has finished. */
  stop(): Promise<void>;
}

export function repeat(
  intervalMs: number,
  work: () => Promise<void>,
  onError: (error: unknown) => void,
): Repeated {
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  let stopped = false;
  const run = () => {
    // After the previous run, failed or not: a failure is reported once, by that run's caller.
    running = running
      .catch(() => {})
      .then(async () => {
        if (stopped) return;
        busy = true;
        try {
          await work();
        } finally {
          busy = false;
        }
      });
    return running;
  };
  const timer = setInterval(() => {
    if (!busy) run().catch(onError);
  }, intervalMs);
  // The timer alone does not keep the process alive.
  timer.unref();
  return {
    run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running.catch(() => {});
    },
  };
}
