// How many streams may be open: at most `maxOpen` in this process (below its connection cap, so
// streams never take the connections /health and ordinary queries need), and at most so many per
// client address and per credential, the last two counted once across replicas while Redis
// answers. A stream kind takes its place here before it starts any work.
import type { Lease, SharedPlaces } from "../../redis/shared-budgets.ts";
import { HttpError } from "../errors.ts";

export interface StreamCapOptions {
  maxOpen: number;
  maxPerAddress: number;
  maxPerCredential: number;
  /** Places counted across replicas (REDIS_URL); absent: this process only. */
  shared?: { perAddress: SharedPlaces; perCredential: SharedPlaces };
}

export class StreamCaps {
  private open = 0;
  private readonly maxOpen: number;
  private readonly perAddress: Places;
  private readonly perCredential: Places;

  constructor(options: StreamCapOptions) {
    this.maxOpen = options.maxOpen;
    this.perAddress = new Places(
      options.maxPerAddress,
      options.shared?.perAddress,
      (max) => `This address already has ${max} streams open; close one first.`,
    );
    this.perCredential = new Places(
      options.maxPerCredential,
      options.shared?.perCredential,
      (max) => `This credential already has ${max} streams open; close one first.`,
    );
  }

  get size(): number {
    return this.open;
  }

  /** A place for one more stream, or the refusal: 503 overloaded for the process, 429 for the rest. */
  async take(address: string, credential: string): Promise<() => void> {
    if (this.open >= this.maxOpen) {
      throw new HttpError(
        "overloaded",
        "The service has as many streams open as it takes; retry shortly.",
        { retryAfterSeconds: 5 },
      );
    }
    this.open++;
    try {
      const fromAddress = await this.perAddress.take(address);
      try {
        const fromCredential = await this.perCredential.take(credential);
        return () => {
          this.open--;
          fromAddress();
          fromCredential();
        };
      } catch (error) {
        fromAddress();
        throw error;
      }
    } catch (error) {
      this.open--;
      throw error;
    }
  }
}

/** One cap per key (an address, a credential): counted here, and across replicas when shared. */
class Places {
  private readonly held = new Map<string, number>();
  private readonly max: number;
  private readonly shared: SharedPlaces | undefined;
  private readonly refusal: (max: number) => string;

  constructor(max: number, shared: SharedPlaces | undefined, refusal: (max: number) => string) {
    this.max = max;
    this.shared = shared;
    this.refusal = refusal;
  }

  async take(key: string): Promise<() => void> {
    // Across replicas while Redis answers; this process's own count holds either way.
    const lease: Lease | false | undefined = this.shared
      ? await this.shared.hold(key, this.max)
      : undefined;
    const count = this.held.get(key) ?? 0;
    if (lease === false || count >= this.max) {
      if (lease) lease.release();
      throw new HttpError("rate_limited", this.refusal(this.max));
    }
    this.held.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) this.held.delete(key);
      else this.held.set(key, left);
      if (lease) lease.release();
    };
  }
}
