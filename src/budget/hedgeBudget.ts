import { wholeNumber } from "../options.js";

/**
 * A per-client cap on the hedges in flight at once. A policy takes a slot
 * before a hedge launches (through its race strategy's `admit`) and gives it
 * back when that hedge settles or is aborted (`release`), so a region that
 * slows every request down cannot make the client double its load without
 * bound.
 */
export class HedgeBudget {
  private held = 0;

  /**
   * @param limit - how many hedges may be in flight at once; a whole number of at least 1.
   * @param option - the option name a bad `limit` is reported under.
   */
  constructor(
    readonly limit: number,
    option = "limit",
  ) {
    wholeNumber(option, limit, 1);
  }

  /** The hedges in flight now. */
  get inUse(): number {
    return this.held;
  }

  /** Takes a slot if one is free. @returns whether the hedge may launch. */
  tryAcquire(): boolean {
    if (this.held >= this.limit) return false;
    this.held++;
    return true;
  }

  /**
   * Gives a slot back. A release without a matching acquire is ignored, so
   * that the count can never go below zero and hand out more slots than
   * the limit.
   */
  release(): void {
    if (this.held > 0) this.held--;
  }
}
