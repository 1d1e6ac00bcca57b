import type { LatencyClass } from "../learning/latencyWindows.js";
import { classifyMetadataResult, isFinalResult, isSuccessResult } from "../cosmos/statusTables.js";
import { carriesOperationErrors } from "../cosmos/writeSafety.js";
import type { HedgeBudget } from "../budget/hedgeBudget.js";
import { stragglerEvidence, waitForEvidence } from "../planning/hedgeDecision.js";
import type { LoadBudget } from "../budget/loadBudget.js";
import type { RaceStrategy, SettledArm, Verdict } from "./race.js";

/** Where a document race finds its primary region's healthy tail, the yardstick of its straggler evidence. */
export interface HealthyTails {
  /** Milliseconds: the 99th percentile of a region's healthy latencies in a class; `undefined` while unknown. */
  healthyTailMs(region: string, latencyClass: LatencyClass): number | undefined;
}

/** The primary of a document race, whose healthy tail says how far past it the read has waited. */
export interface RacePrimary {
  readonly tails: HealthyTails;
  readonly region: string;
  readonly latencyClass: LatencyClass;
}

/**
 * The race of a document request: a hedge after the threshold, then one per
 * step; a hedge's transient result launches the next hedge at once; the
 * primary's answer, or a hedge's success before it, ends the race (a hedge's
 * final error never does, nor its 304, and neither does its batch or bulk
 * answer that reports a failed operation): a transient answer of the primary goes back
 * to the SDK, whose own retry policy moves on as it would unhedged. A
 * write's primary that answers without winning waits for the hedges in
 * flight, which may have applied the write. The load budget, when there is one, admits each hedge,
 * by how far past its primary's healthy tail the read has waited (see
 * `stragglerEvidence`): when the budget is short, the first hedge waits
 * until the read has the evidence the budget asks for, and the reads most
 * likely to be stragglers get the last hedges. A read refused because the
 * balance fell while it waited is asked once more at its primary's healthy
 * tail (`admitAfter`).
 *
 * The engine's side of that contract: `delayBefore(1)` is asked when the
 * primary launches (the budget's state then sets the first delay),
 * `admit(index)` when hedge `index` is about to launch, and `admitAfter`
 * right after a refusal; the wait is measured from `primaryStartedAt`. A
 * strategy without a primary keeps no state of a race, so the races of one
 * timing share it while the budget covers its reserve (then no tail is
 * needed).
 */
export class DocumentRaceStrategy implements RaceStrategy {
  readonly earlyLaunchReason = "transientResult";

  /**
   * @param primary - where the healthy tail comes from; without it every read counts as a likely straggler, as before.
   * @param primaryStartedAt - when the primary launched (`performance.now()`); by default, when the strategy is made.
   * @param kind - what the race sends: a read; a write, whose hedges in flight the primary's answer waits for (see
   *   `RaceStrategy.primaryWaitsForHedges`); or a batch or bulk request, a write whose 2xx may carry failed operations.
   */
  constructor(
    readonly thresholdMs: number,
    readonly thresholdStepMs: number,
    private readonly budget: LoadBudget | undefined,
    private readonly primary?: RacePrimary | undefined,
    private readonly primaryStartedAt: number = performance.now(),
    private readonly kind: "read" | "write" | "batch" = "read",
  ) {}

  /** A write's or a batch's: see `RaceStrategy.primaryWaitsForHedges`. */
  get primaryWaitsForHedges(): boolean {
    return this.kind !== "read";
  }

  /** The hedge `admit` refused last, and the one whose one ask again `admitAfter` named: a strategy with a primary belongs to one race. */
  private refusedFor: number | undefined;
  private askedAgainFor: number | undefined;

  delayBefore(index: number): number {
    if (index !== 1) return this.thresholdStepMs;
    const needed = this.budget?.evidenceNeeded() ?? 0;
    // The common case: the budget covers its reserve, and no tail is looked up.
    if (needed === 0) return this.thresholdMs;
    const tail = this.healthyTailMs();
    // Whole milliseconds, as timers fire: a timer set for 19.3 ms fires at 19, short of the evidence asked for.
    return tail === undefined ? this.thresholdMs : Math.max(this.thresholdMs, Math.ceil(waitForEvidence(needed, tail)));
  }

  judge(arm: SettledArm): Verdict {
    if (!isFinalResult(arm.result)) return "next";
    if (arm.index === 0) return "win";
    // A hedge's final error (a lagging region's 404/0, a 401, a 409) must not beat a primary that may still succeed;
    // nor may its 200 that reports 409s for documents the primary created, nor its 304: "nothing newer than your etag or
    // continuation" from a region behind the primary's, where a change feed read until 304 would stop before the changes.
    const response = arm.result.response;
    const succeeded =
      isSuccessResult(arm.result) && response?.status !== 304 && !(this.kind === "batch" && response !== undefined && carriesOperationErrors(response));
    return succeeded ? "win" : "wait";
  }

  admit(index = 1): boolean {
    const { budget } = this;
    if (budget === undefined) return true;
    // The ask again of a hedge (see `admitAfter`) was counted as refused the first time.
    const counted = this.askedAgainFor !== index;
    const admitted =
      budget.evidenceNeeded() === 0
        ? budget.tryWithdraw(1, counted)
        : budget.tryWithdraw(stragglerEvidence(performance.now() - this.primaryStartedAt, this.healthyTailMs()), counted);
    // The shared strategy (no primary) keeps no state of the races it serves.
    if (!admitted && this.primary !== undefined) this.refusedFor = index;
    return admitted;
  }

  /**
   * A read the budget refused for want of straggler evidence (the balance
   * fell while it waited) asks once more, at its primary's healthy tail,
   * where its evidence is full: a read still running there is most likely a
   * straggler. Otherwise a straggler refused while the balance was briefly
   * short ran unhedged for its whole delay, while reads after it, past the
   * same threshold, were hedged. One ask only, so that no read polls a
   * budget that others keep spending. A read without a known tail already
   * asked with full evidence, and one past its tail or refused by a balance
   * that covers no hedge at all waits for nothing: its refusal is final.
   */
  admitAfter(index = 1): number | undefined {
    const { budget } = this;
    const tail = this.healthyTailMs();
    if (budget === undefined || tail === undefined || !(tail > 0) || this.refusedFor !== index || this.askedAgainFor !== undefined) return undefined;
    if (!(budget.evidenceNeeded() <= 1)) return undefined;
    const waitMs = tail - (performance.now() - this.primaryStartedAt);
    // At or past the tail it asked with full evidence already: refused for another reason (every slot for hedges in
    // flight taken), which waiting does not change.
    if (!(waitMs > 0)) return undefined;
    this.askedAgainFor = index;
    // Whole milliseconds, as timers fire (see `delayBefore`).
    return Math.ceil(waitMs);
  }

  release(): void {
    this.budget?.release();
  }

  private healthyTailMs(): number | undefined {
    const { primary } = this;
    return primary === undefined ? undefined : primary.tails.healthyTailMs(primary.region, primary.latencyClass);
  }
}

/**
 * The race of a metadata read: the primary is authoritative. Its answer
 * ends the race even with the hedge in flight (a regional failure goes back
 * to the SDK's retry as it would unhedged); the hedge wins only with a
 * success before it. The
 * client's cap on metadata hedges in flight admits the hedge.
 */
export class MetadataRaceStrategy implements RaceStrategy {
  constructor(
    private readonly thresholdMs: number,
    private readonly budget: HedgeBudget,
  ) {}

  delayBefore(): number {
    return this.thresholdMs;
  }

  judge(arm: SettledArm): Verdict {
    const outcome = classifyMetadataResult(arm.result);
    // A regional failure is no win: it goes back as the race's fallback, for the SDK's retry.
    if (arm.index === 0) return outcome === "regionalFailure" ? "wait" : "win";
    return outcome === "success" ? "win" : "wait";
  }

  admit(): boolean {
    return this.budget.tryAcquire();
  }

  release(): void {
    this.budget.release();
  }
}
