import { describe, optionsObject, positiveMilliseconds, wholeNumber } from "../options.js";
import { HedgeBudget } from "./hedgeBudget.js";

/** Options of the data-plane hedge budget (`budget` of the `crossRegionHedgingPolicy`). */
export interface HedgeLoadBudgetOptions {
  /**
   * The share of extra requests hedges may add over the window, above 0 and
   * at most 1: each request deposits this much, each hedge withdraws 1.
   * Default 0.15, or the adaptive threshold's `maxExtraLoad` when that is
   * larger.
   */
  maxExtraLoad?: number;
  /**
   * The floor of the budget: over the 10-second window, hedges may spend
   * `maxExtraLoad` of the requests or this many hedges per second, whichever
   * is more. The floor is not added to the share, so a busy client never
   * hedges more than its share; it lets a quiet client, whose few requests
   * deposit little, still hedge. The trade-off: below
   * `minHedgesPerSecond / maxExtraLoad` requests a second (6.7 with the
   * defaults) the floor decides, and hedges may then exceed the share (at
   * 0.5 requests a second, every request may be hedged); above that rate the
   * share alone decides. 0 or more; default 1.
   */
  minHedgesPerSecond?: number;
  /** The most hedges in flight at once; a whole number of at least 1. Default 100. */
  maxHedgesInFlight?: number;
}

/** The defaults of the hedge budget. */
export const loadBudgetDefaults = {
  /**
   * The share of extra requests hedges may add. Above the adaptive
   * threshold's 5 %, which is what hedging costs while every region is
   * healthy: the budget is the ceiling for when one is not, and a region
   * whose reads straggle one time in ten needs one hedge in ten to cover
   * them. Every region slow at once costs at most this much.
   */
  maxExtraLoad: 0.15,
  /** Hedges per second allowed whatever the traffic: the floor of the window's budget, not an addition to the share. */
  minHedgesPerSecond: 1,
  /** Hedges in flight at once. */
  maxHedgesInFlight: 100,
  /** Milliseconds over which deposits and withdrawals count. */
  windowMs: 10_000,
} as const;

/** Slots per window: deposits and withdrawals leave the window a tenth of it at a time. */
const slotsPerWindow = 10;

/** {@link HedgeLoadBudgetOptions} with every default filled in. */
export interface LoadBudgetSettings {
  readonly maxExtraLoad: number;
  readonly minHedgesPerSecond: number;
  readonly maxHedgesInFlight: number;
  /** Milliseconds over which deposits and withdrawals count. */
  readonly windowMs: number;
}

/**
 * Validates a `budget` option and fills in its defaults.
 * @param thresholdShare - the adaptive threshold's `maxExtraLoad`, if any: the default share is never below it.
 */
export function resolveLoadBudget(options: HedgeLoadBudgetOptions, thresholdShare = 0): LoadBudgetSettings {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`budget must be false or an options object; got ${describe(options)}.`);
  }
  optionsObject("budget", options, ["maxExtraLoad", "minHedgesPerSecond", "maxHedgesInFlight"]);
  const maxExtraLoad = options.maxExtraLoad ?? Math.max(loadBudgetDefaults.maxExtraLoad, thresholdShare);
  if (typeof maxExtraLoad !== "number" || !Number.isFinite(maxExtraLoad) || maxExtraLoad <= 0 || maxExtraLoad > 1) {
    throw new RangeError(`budget.maxExtraLoad must be a number above 0 and at most 1; got ${describe(maxExtraLoad)}.`);
  }
  const minHedgesPerSecond = options.minHedgesPerSecond ?? loadBudgetDefaults.minHedgesPerSecond;
  if (typeof minHedgesPerSecond !== "number" || !Number.isFinite(minHedgesPerSecond) || minHedgesPerSecond < 0) {
    throw new RangeError(`budget.minHedgesPerSecond must be a finite number of at least 0; got ${describe(minHedgesPerSecond)}.`);
  }
  const maxHedgesInFlight = wholeNumber("budget.maxHedgesInFlight", options.maxHedgesInFlight ?? loadBudgetDefaults.maxHedgesInFlight, 1);
  return { maxExtraLoad, minHedgesPerSecond, maxHedgesInFlight, windowMs: loadBudgetDefaults.windowMs };
}

interface Slot {
  epoch: number;
  deposits: number;
  withdrawals: number;
}

/**
 * A deposit/withdraw budget that bounds the extra load hedging adds, in the
 * manner of Finagle's retry budget: over a sliding window, every request
 * deposits `maxExtraLoad` and every hedge withdraws 1; a hedge is allowed
 * while what the window holds covers it. What the window holds is never
 * less than a floor of `minHedgesPerSecond` per second of the window, so a
 * quiet client can still hedge; the floor is a minimum, not an addition,
 * because added to the share it would let a busy client exceed the share by
 * the floor (at 30 requests a second, the default floor alone is 3.3 % more
 * requests). A separate cap bounds the hedges in flight, so a burst of slow
 * requests cannot spend the whole balance at once. Whatever the threshold,
 * hedges in any window therefore add at most `maxExtraLoad` of that
 * window's requests, or the floor when that is more.
 *
 * The window is a ring of slots rotated lazily when the budget is used; no
 * timer runs.
 */
export class LoadBudget {
  private readonly slots: Slot[];
  private readonly slotMs: number;
  private readonly inFlight: HedgeBudget;
  private refused = 0;

  constructor(readonly settings: LoadBudgetSettings) {
    positiveMilliseconds("windowMs", settings.windowMs);
    this.slotMs = settings.windowMs / slotsPerWindow;
    this.slots = Array.from({ length: slotsPerWindow }, () => ({ epoch: -Infinity, deposits: 0, withdrawals: 0 }));
    this.inFlight = new HedgeBudget(settings.maxHedgesInFlight, "budget.maxHedgesInFlight");
  }

  /** Counts one request. */
  deposit(): void {
    this.current().deposits += 1;
  }

  /**
   * Takes what one hedge costs, if the balance covers it and a slot for a
   * hedge in flight is free. A hedge that got through must be
   * {@link LoadBudget.release}d when it settles or is aborted.
   * @returns whether the hedge may launch.
   */
  tryWithdraw(): boolean {
    if (this.balance < 1 || !this.inFlight.tryAcquire()) {
      this.refused += 1;
      return false;
    }
    this.current().withdrawals += 1;
    return true;
  }

  /** Gives back the in-flight slot of a hedge that settled or was aborted; what it withdrew stays spent. */
  release(): void {
    this.inFlight.release();
  }

  /** How many hedges the balance covers now. */
  get balance(): number {
    const oldest = this.epochOf(performance.now()) - slotsPerWindow + 1;
    let deposits = 0;
    let withdrawals = 0;
    for (const slot of this.slots) {
      if (slot.epoch < oldest) continue;
      deposits += slot.deposits;
      withdrawals += slot.withdrawals;
    }
    const floor = (this.settings.minHedgesPerSecond * this.settings.windowMs) / 1000;
    return Math.max(floor, deposits * this.settings.maxExtraLoad) - withdrawals;
  }

  /** The hedges in flight now. */
  get hedgesInFlight(): number {
    return this.inFlight.inUse;
  }

  /** How many hedges the budget has refused since it was created. */
  get refusals(): number {
    return this.refused;
  }

  private current(): Slot {
    const epoch = this.epochOf(performance.now());
    const slot = this.slots[((epoch % slotsPerWindow) + slotsPerWindow) % slotsPerWindow];
    if (slot.epoch !== epoch) {
      slot.epoch = epoch;
      slot.deposits = 0;
      slot.withdrawals = 0;
    }
    return slot;
  }

  private epochOf(now: number): number {
    return Math.floor(now / this.slotMs);
  }
}
