// A histogram of request durations by endpoint, counted in plain arrays and handed to prom-client's
// registry when scraped (as query_service_requests_total is). prom-client's Histogram validates and
// hashes its labels on every observe: 0.2 µs an observation in a micro-benchmark, against 0.01 for
// these arrays (docs/benchmarks.md, "Result cache").
import type { Metric, MetricValue, Registry } from "prom-client";

interface Counts {
  /** Observations per bucket, not cumulative; one more for +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}

export class DurationHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #bounds: readonly number[];
  readonly #byEndpoint = new Map<string, Counts>();

  constructor(options: { name: string; help: string; buckets: number[]; registers: Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.#bounds = options.buckets;
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  observe(endpoint: string, seconds: number): void {
    let counts = this.#byEndpoint.get(endpoint);
    if (counts === undefined) {
      counts = { buckets: new Array(this.#bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.#byEndpoint.set(endpoint, counts);
    }
    let bucket = 0;
    while (bucket < this.#bounds.length && seconds > (this.#bounds[bucket] as number)) bucket++;
    counts.buckets[bucket] = (counts.buckets[bucket] as number) + 1;
    counts.sum += seconds;
    counts.count++;
  }

  /** What prom-client's registry reads: cumulative buckets by `le`, then the sum and the count. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Value[] } {
    const values: Value[] = [];
    for (const [endpoint, { buckets, sum, count }] of this.#byEndpoint) {
      let below = 0;
      for (const [i, bound] of this.#bounds.entries()) {
        below += buckets[i] as number;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le: bound, endpoint },
          value: below,
        });
      }
      values.push(
        { metricName: `${this.name}_bucket`, labels: { le: "+Inf", endpoint }, value: count },
        { metricName: `${this.name}_sum`, labels: { endpoint }, value: sum },
        { metricName: `${this.name}_count`, labels: { endpoint }, value: count },
      );
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  reset(): void {
    this.#byEndpoint.clear();
  }
}

type Value = MetricValue<"le" | "endpoint"> & { metricName: string };
