import { describe, optionKeys, optionsObject, orDefault, positiveMilliseconds, share, wholeNumber } from "../options.js";
import { HedgeBudget } from "./hedgeBudget.js";

/** Options of the data-plane hedge budget (`budget` of the `crossRegionHedgingPolicy`). */
export interface HedgeLoadBudgetOptions {
  /**
   * The share of extra requests hedges may add, above 0 and at most 1: each
   * request deposits this much, each hedge withdraws 1. It binds over a
   * minute: hedges in any 60 seconds add at most this share of those
   * seconds' requests (or the floor, see `minHedgesPerSecond`). Over any
   * 10 seconds hedges may spend this share plus 10 seconds of the floor, so
   * that a burst of slow requests is hedged. Default 0.15, or the adaptive
   * threshold's `maxExtraLoad` when that is larger.
   */
  maxExtraLoad?: number;
  /**
   * The floor of the budget, in hedges per second, so that a quiet client,
   * whose few requests deposit little, still hedges. Over any 10 seconds it
   * is added to the share: hedges may spend `maxExtraLoad` of those
   * requests plus 10 × this, room for a burst. Over any 60 seconds it is a
   * minimum, not an addition: hedges spend at most `maxExtraLoad` of those
   * requests or 60 × this, whichever is more. The trade-off: a busy client
   * may exceed its share within 10 seconds but not over a minute, and below
   * `minHedgesPerSecond / maxExtraLoad` requests a second (6.7 with the
   * defaults) the floor decides, so a client sending one request every two
   * seconds may hedge every one. 0 or more; default 1.
   */
  minHedgesPerSecond?: number;
  /** The most hedges in flight at once; a whole number of at least 1. Default 100. */
  maxHedgesInFlight?: number;
}

const loadBudgetOptionKeys = optionKeys<HedgeLoadBudgetOptions>({ maxExtraLoad: true, minHedgesPerSecond: true, maxHedgesInFlight: true });

/** The defaults of the hedge budget. */
export const loadBudgetDefaults = {
  /**
   * The share of extra requests hedges may add. Above the adaptive
   * threshold's 5 %, which is what hedging costs while every region is
   * healthy: the budget is the ceiling for when one is not, and a region
   * whose reads straggle one time in ten needs one hedge in ten to cover
   * them. Every region slow at once costs at most this much over a minute.
   */
  maxExtraLoad: 0.15,
  /** Hedges per second allowed whatever the traffic: added to the share over the short window, its minimum over the long one. */
  minHedgesPerSecond: 1,
  /** Hedges in flight at once. */
  maxHedgesInFlight: 100,
  /** Milliseconds of the short window, which leaves room for bursts: the share plus the floor. */
  windowMs: 10_000,
  /** Milliseconds of the long window, over which the share (or the floor, when more) binds. */
  longWindowMs: 60_000,
  /**
   * The share of what the short window allows (its floor plus its share of
   * the requests) kept for the reads most likely to be stragglers: a hedge
   * with no straggler evidence must leave this much in the balance, one
   * with full evidence may spend down to the last hedge. A quarter: at the
   * defaults and 30 requests a second, 14 of the 10 seconds' 55 hedges.
   */
  reserveShare: 0.25,
} as const;

/** Deposits and withdrawals are counted per second: a window moves on a second at a time. */
const bucketMs = 1000;

/**
 * What a balance may fall short of a whole hedge by and still cover it: a
 * share times a count that makes a whole number of hedges on paper can land
 * a hair below it in floating point.
 */
const roundingSlack = 1e-9;

/** {@link HedgeLoadBudgetOptions} with every default filled in. */
export interface LoadBudgetSettings {
  readonly maxExtraLoad: number;
  readonly minHedgesPerSecond: number;
  readonly maxHedgesInFlight: number;
  /** Milliseconds of the short window: the share plus the floor. */
  readonly windowMs: number;
  /** Milliseconds of the long window: the share or the floor, whichever is more. */
  readonly longWindowMs: number;
}

/**
 * Validates a `budget` option and fills in its defaults.
 * @param thresholdShare - the adaptive threshold's `maxExtraLoad`, if any: the default share is never below it.
 */
export function resolveLoadBudget(options: HedgeLoadBudgetOptions, thresholdShare = 0): LoadBudgetSettings {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`budget must be false or an options object; got ${describe(options)}.`);
  }
  optionsObject("budget", options, loadBudgetOptionKeys);
  // A share of 1 lets every request hedge, which a budget may allow (the adaptive threshold, whose quantile it sets, may not).
  const maxExtraLoad = share("budget.maxExtraLoad", orDefault(options.maxExtraLoad, Math.max(loadBudgetDefaults.maxExtraLoad, thresholdShare)), true);
  const minHedgesPerSecond = orDefault(options.minHedgesPerSecond, loadBudgetDefaults.minHedgesPerSecond);
  if (typeof minHedgesPerSecond !== "number" || !Number.isFinite(minHedgesPerSecond) || minHedgesPerSecond < 0) {
    throw new RangeError(`budget.minHedgesPerSecond must be a finite number of at least 0; got ${describe(minHedgesPerSecond)}.`);
  }
  const maxHedgesInFlight = wholeNumber("budget.maxHedgesInFlight", orDefault(options.maxHedgesInFlight, loadBudgetDefaults.maxHedgesInFlight), 1);
  return {
    maxExtraLoad,
    minHedgesPerSecond,
    maxHedgesInFlight,
    windowMs: loadBudgetDefaults.windowMs,
    longWindowMs: loadBudgetDefaults.longWindowMs,
  };
}

/** `value` modulo `length`, never negative. */
function modulo(value: number, length: number): number {
  return ((value % length) + length) % length;
}

/** A window's length in one-second buckets. */
function bucketsOf(option: string, windowMs: number): number {
  positiveMilliseconds(option, windowMs);
  if (windowMs % bucketMs !== 0) throw new RangeError(`${option} must be a whole number of seconds; got ${windowMs}.`);
  return windowMs / bucketMs;
}

/**
 * A deposit/withdraw budget that bounds the extra load hedging adds, in the
 * manner of Finagle's retry budget: every request deposits `maxExtraLoad`
 * and every hedge withdraws 1, and a hedge goes only when two windows both
 * cover it. Over the short window (10 s) the floor of `minHedgesPerSecond`
 * is added to the share, Finagle's shape, so that a burst of slow requests
 * (stragglers that arrive together) is hedged rather than refused. Over the
 * long window (60 s) the floor is only a minimum: what the burst borrowed
 * comes out of the same minute's share, so a busy client whose every
 * request is slow adds at most `maxExtraLoad` of a minute's requests, while
 * a quiet client still hedges about `minHedgesPerSecond`. A separate cap
 * bounds the hedges in flight.
 *
 * Requests and hedges are counted in a ring of one-second buckets as long
 * as the long window, with running sums for each window, so that a request
 * or a hedge costs O(1) and allocates nothing (each second is moved past
 * once, however many requests it holds); the ring moves on lazily when the
 * budget is used, and no timer runs.
 */
export class LoadBudget {
  private readonly deposits: Uint32Array;
  private readonly withdrawals: Uint32Array;
  private readonly shortBuckets: number;
  private readonly shortFloor: number;
  private readonly longFloor: number;
  private readonly inFlight: HedgeBudget;
  /** The second the newest bucket counts. */
  private second: number;
  private shortDeposits = 0;
  private shortWithdrawals = 0;
  private longDeposits = 0;
  private longWithdrawals = 0;
  private refused = 0;

  constructor(readonly settings: LoadBudgetSettings) {
    this.shortBuckets = bucketsOf("windowMs", settings.windowMs);
    const longBuckets = bucketsOf("longWindowMs", settings.longWindowMs);
    if (longBuckets < this.shortBuckets) {
      throw new RangeError(`longWindowMs must be at least windowMs (${settings.windowMs}); got ${settings.longWindowMs}.`);
    }
    this.deposits = new Uint32Array(longBuckets);
    this.withdrawals = new Uint32Array(longBuckets);
    this.shortFloor = (settings.minHedgesPerSecond * settings.windowMs) / 1000;
    this.longFloor = (settings.minHedgesPerSecond * settings.longWindowMs) / 1000;
    this.second = this.secondOf(performance.now());
    this.inFlight = new HedgeBudget(settings.maxHedgesInFlight, "budget.maxHedgesInFlight");
  }

  /** Counts one request. */
  deposit(): void {
    this.deposits[this.advance()]! += 1;
    this.shortDeposits += 1;
    this.longDeposits += 1;
  }

  /**
   * Counts one request, as {@link LoadBudget.deposit} does, and says whether
   * its first hedge could go without any straggler evidence (see
   * {@link LoadBudget.evidenceNeeded}): what a read sent lazily needs to know,
   * with the ring moved on once instead of three times.
   * @param now - the time (`performance.now()`), when the caller has it.
   */
  depositCoveringReserve(now = performance.now()): boolean {
    const index = this.advance(now);
    this.deposits[index]! += 1;
    this.shortDeposits += 1;
    this.longDeposits += 1;
    return this.balanceAsOfNow() - 1 + roundingSlack >= this.reserveAsOfNow();
  }

  /**
   * Takes what one hedge costs, if both windows cover it, with the reserve
   * its straggler evidence must leave (see {@link LoadBudget.evidenceNeeded}),
   * and a slot for a hedge in flight is free. A hedge that got through must
   * be {@link LoadBudget.release}d when it settles or is aborted.
   * @param evidence - how strongly the read looks like a straggler, 0 to 1
   *   (`stragglerEvidence`); 1, the default, may spend the balance to its last hedge.
   * @param countRefusal - whether a refusal counts in {@link LoadBudget.refusals};
   *   `false` for a read asked again after a refusal already counted.
   * @returns whether the hedge may launch.
   */
  tryWithdraw(evidence = 1, countRefusal = true): boolean {
    if (this.balance < 1 + this.reserve * (1 - Math.min(1, Math.max(0, evidence))) - roundingSlack || !this.inFlight.tryAcquire()) {
      if (countRefusal) this.refused += 1;
      return false;
    }
    this.withdrawals[this.advance()]! += 1;
    this.shortWithdrawals += 1;
    this.longWithdrawals += 1;
    return true;
  }

  /** Gives back the in-flight slot of a hedge that settled or was aborted; what it withdrew stays spent. */
  release(): void {
    this.inFlight.release();
  }

  /**
   * The hedges kept for the reads most likely to be stragglers: `reserveShare`
   * of what the short window allows now. When the balance is short, reads
   * that have waited longest past their region's healthy tail get the last
   * hedges, and a burst of healthy-but-slowish reads that barely passed the
   * threshold cannot spend them all before the stragglers that follow.
   */
  get reserve(): number {
    this.advance();
    return this.reserveAsOfNow();
  }

  /** {@link LoadBudget.reserve} with the ring as it stands (moved on by the caller). */
  private reserveAsOfNow(): number {
    return loadBudgetDefaults.reserveShare * (this.shortFloor + this.settings.maxExtraLoad * this.shortDeposits);
  }

  /**
   * The least straggler evidence (0 to 1) a hedge needs to be admitted now:
   * 0 while the balance covers a hedge and the whole reserve; rising to 1 as
   * the balance falls through the reserve; above 1 (none is admitted) when
   * the balance covers no hedge at all.
   */
  evidenceNeeded(): number {
    const spare = this.balance - 1 + roundingSlack;
    if (spare < 0) return Number.POSITIVE_INFINITY;
    const reserve = this.reserve;
    return spare >= reserve ? 0 : 1 - spare / reserve;
  }

  /** How many hedges both windows cover now: the smaller of the two balances. */
  get balance(): number {
    this.advance();
    return this.balanceAsOfNow();
  }

  /** {@link LoadBudget.balance} with the ring as it stands (moved on by the caller). */
  private balanceAsOfNow(): number {
    const { maxExtraLoad } = this.settings;
    const short = this.shortFloor + maxExtraLoad * this.shortDeposits - this.shortWithdrawals;
    const long = Math.max(this.longFloor, maxExtraLoad * this.longDeposits) - this.longWithdrawals;
    return Math.min(short, long);
  }

  /** The hedges in flight now. */
  get hedgesInFlight(): number {
    return this.inFlight.inUse;
  }

  /** How many hedges the budget has refused since it was created. */
  get refusals(): number {
    return this.refused;
  }

  /**
   * Moves the ring on to the current second: each second passed takes its
   * bucket 10 seconds back out of the short sums, and the bucket a minute
   * back out of the long sums before it is reused.
   * @returns the index of the current second's bucket.
   */
  private advance(at = performance.now()): number {
    const now = this.secondOf(at);
    const length = this.deposits.length;
    if (now > this.second) {
      if (now - this.second >= length) {
        this.deposits.fill(0);
        this.withdrawals.fill(0);
        this.shortDeposits = this.shortWithdrawals = this.longDeposits = this.longWithdrawals = 0;
      } else {
        for (let second = this.second + 1; second <= now; second++) {
          const leavingShort = modulo(second - this.shortBuckets, length);
          this.shortDeposits -= this.deposits[leavingShort]!;
          this.shortWithdrawals -= this.withdrawals[leavingShort]!;
          const reused = modulo(second, length);
          this.longDeposits -= this.deposits[reused]!;
          this.longWithdrawals -= this.withdrawals[reused]!;
          this.deposits[reused] = 0;
          this.withdrawals[reused] = 0;
        }
      }
      this.second = now;
    }
    return modulo(this.second, length);
  }

  private secondOf(now: number): number {
    return Math.floor(now / bucketMs);
  }
}
