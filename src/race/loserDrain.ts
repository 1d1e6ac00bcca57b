import { describe, optionKeys, optionsObject, orDefault, positiveMilliseconds, wholeNumber } from "../options.js";
import { HedgeBudget } from "../budget/hedgeBudget.js";

/**
 * Bounds on the losers of a decided race that are left to finish in the
 * background (`drainLosers` of the hedging policies). Past any of them the
 * loser is aborted, as it is with `drainLosers: false`.
 */
export interface LoserDrainOptions {
  /** Milliseconds a loser may keep running after its race was decided. Default 5000. */
  maxDrainMs?: number;
  /**
   * Response body bytes a loser may receive after its race was decided; a
   * whole number, 0 or more. Default 1 MiB (1048576). A loser's response is
   * asked for as a stream (its `streamResponseStatusCodes`), which the drain
   * reads and discards; core-rest-pipeline's Node transport reads that field
   * when the response headers arrive, so a loser whose headers had already
   * arrived when the race was decided is bounded by time only.
   */
  maxDrainBytes?: number;
  /** Losers of this policy draining at once; a loser that finds them all taken is aborted. A whole number of at least 1. Default 128. */
  maxConcurrentDrains?: number;
}

const loserDrainOptionKeys = optionKeys<LoserDrainOptions>({ maxDrainMs: true, maxDrainBytes: true, maxConcurrentDrains: true });

/** The defaults of loser draining. */
export const loserDrainDefaults = {
  /**
   * Milliseconds a loser may run on: long enough for the stragglers hedging
   * is for (a second or two) to finish and hand back their connection,
   * short enough that a stuck request does not hold a socket and a drain
   * slot for long.
   */
  maxDrainMs: 5000,
  /** Body bytes a loser may receive (read and dropped as they come, never held): every point read and most query pages, not a runaway one. */
  maxDrainBytes: 1_048_576,
  /**
   * Drains at once per policy. Each holds a socket and a timer, no body.
   * Stragglers are what losers usually are, so drains outlive requests: the
   * drains in flight are the losers per second times how long each runs on,
   * whatever the reads in flight. In the WAN benchmark, 10 reads in flight
   * (500 to 700 reads a second) with one in ten a second late keep 40 to 64
   * running, and 64 was reached; past the bound each loser is aborted, which
   * costs a connection, so the bound sits at twice that. Far past it, a
   * region is slow for most reads, and aborting its losers costs little next
   * to what it already costs.
   */
  maxConcurrentDrains: 128,
} as const;

/** {@link LoserDrainOptions} with every default filled in. */
export interface LoserDrainSettings {
  readonly maxDrainMs: number;
  readonly maxDrainBytes: number;
  readonly maxConcurrentDrains: number;
}

/** The drains of one policy: the bounds of each, and the slots that bound how many run at once. */
export class LoserDrain {
  private readonly slots: HedgeBudget;

  constructor(readonly settings: LoserDrainSettings) {
    this.slots = new HedgeBudget(settings.maxConcurrentDrains, "drainLosers.maxConcurrentDrains");
  }

  /** Takes a drain slot if one is free. @returns whether the loser may drain. */
  tryStart(): boolean {
    return this.slots.tryAcquire();
  }

  /** Gives back the slot of a drain that ended. */
  end(): void {
    this.slots.release();
  }

  /** Drains running now. */
  get inFlight(): number {
    return this.slots.inUse;
  }
}

/**
 * Validates a `drainLosers` option and fills in its defaults.
 * @returns the policy's drains, or `undefined` when losers are aborted (`false`).
 */
export function resolveLoserDrain(option: boolean | LoserDrainOptions | undefined): LoserDrain | undefined {
  if (option === false) return undefined;
  if (option === undefined || option === true) return new LoserDrain(loserDrainDefaults);
  if (option === null || typeof option !== "object" || Array.isArray(option)) {
    throw new TypeError(`drainLosers must be true, false or an options object; got ${describe(option)}.`);
  }
  optionsObject("drainLosers", option, loserDrainOptionKeys);
  return new LoserDrain({
    maxDrainMs: positiveMilliseconds("drainLosers.maxDrainMs", orDefault(option.maxDrainMs, loserDrainDefaults.maxDrainMs)),
    maxDrainBytes: wholeNumber("drainLosers.maxDrainBytes", orDefault(option.maxDrainBytes, loserDrainDefaults.maxDrainBytes), 0),
    maxConcurrentDrains: wholeNumber("drainLosers.maxConcurrentDrains", orDefault(option.maxConcurrentDrains, loserDrainDefaults.maxConcurrentDrains), 1),
  });
}
