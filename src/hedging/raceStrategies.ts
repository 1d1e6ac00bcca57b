import { classifyMetadataResult, isFinalResult, isSuccessResult } from "../cosmos/statusTables.js";
import { carriesOperationErrors } from "../cosmos/writeSafety.js";
import type { HedgeBudget } from "./hedgeBudget.js";
import type { LoadBudget } from "./loadBudget.js";
import type { RaceStrategy, SettledArm, Verdict } from "./race.js";

/**
 * The race of a document request: a hedge after the threshold, then one per
 * step; a transient result launches the next hedge at once; the first final
 * result wins, except that a hedge's final error may not beat a primary
 * still in flight, and neither may a hedge's batch or bulk answer that
 * reports a failed operation. The load budget, when there is one, admits
 * each hedge. It keeps no state of a race, so requests with the same
 * timing share one.
 */
export class DocumentRaceStrategy implements RaceStrategy {
  readonly earlyLaunchReason = "transientResult";

  constructor(
    readonly thresholdMs: number,
    readonly thresholdStepMs: number,
    private readonly budget: LoadBudget | undefined,
    private readonly batch = false,
  ) {}

  delayBefore(index: number): number {
    return index === 1 ? this.thresholdMs : this.thresholdStepMs;
  }

  judge(arm: SettledArm): Verdict {
    if (!isFinalResult(arm.result)) return "next";
    if (arm.index === 0) return "win";
    // A hedge's final error (a lagging region's 404/0, a 401, a 409) must not beat a primary that may still succeed;
    // nor may its 200 that reports 409s for documents the primary created.
    const response = arm.result.response;
    const succeeded = isSuccessResult(arm.result) && !(this.batch && response !== undefined && carriesOperationErrors(response));
    return succeeded ? "win" : "hold";
  }

  admit(): boolean {
    return this.budget === undefined || this.budget.tryWithdraw();
  }

  release(): void {
    this.budget?.release();
  }
}

/**
 * The race of a metadata read: the primary is authoritative. Its success or
 * definitive error wins even with the hedge in flight; a regional failure
 * launches the hedge at once; the hedge wins only with a success. The
 * client's cap on metadata hedges in flight admits the hedge.
 */
export class MetadataRaceStrategy implements RaceStrategy {
  readonly earlyLaunchReason = "regionalFailure";

  constructor(
    private readonly thresholdMs: number,
    private readonly budget: HedgeBudget,
  ) {}

  delayBefore(): number {
    return this.thresholdMs;
  }

  judge(arm: SettledArm): Verdict {
    const outcome = classifyMetadataResult(arm.result);
    if (arm.index === 0) return outcome === "regionalFailure" ? "next" : "win";
    return outcome === "success" ? "win" : "wait";
  }

  admit(): boolean {
    return this.budget.tryAcquire();
  }

  release(): void {
    this.budget.release();
  }
}
