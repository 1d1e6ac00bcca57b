import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../caches/regionCache.js";
import { CosmosHeaders } from "../cosmos/headers.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { requestChargeOf, subStatusOf } from "../cosmos/statusTables.js";
import { cloneRequestFor } from "./cloneRequest.js";
import type { HedgeArmDiagnostics, HedgeArmError, HedgeArmReason } from "./diagnostics.js";
import { redactCredentials } from "./redact.js";

/**
 * What a strategy makes of a settled arm: it wins; the next arm launches
 * now; the race waits; or (`hold`) it is an answer that may not beat a
 * primary still in flight: it wins once the primary has settled without
 * winning, or when no arm does better.
 */
export type Verdict = "win" | "next" | "wait" | "hold";

/** An arm that has settled, as a strategy sees it. */
export interface SettledArm {
  /** 0 for the primary, 1.. for the hedges in launch order. */
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly result: ArmResult;
}

/**
 * The policy-specific part of a race: when hedges launch, and which result
 * wins. The engine owns everything else (cloning, timers, aborts, cleanup).
 */
export interface RaceStrategy {
  /** Milliseconds between the launch of arm `index - 1` and of arm `index` (`index` >= 1). */
  delayBefore(index: number): number;
  /** What an arm's settlement means. */
  judge(arm: SettledArm): Verdict;
  /** Why a hedge that launches early (on a `next` verdict) was sent. */
  readonly earlyLaunchReason: HedgeArmReason;
  /** Asked before hedge `index` launches; `false` stops all further hedges (a spent budget). */
  admit?(index: number): boolean;
  /** Called once for every admitted hedge, when it settles or is aborted. */
  release?(index: number): void;
}

/** What an arm is, as its sender sees it. */
export interface ArmLaunch {
  /** 0 for the primary, 1.. for the hedges in launch order. */
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly reason: HedgeArmReason;
}

/** Everything a race needs. */
export interface RaceInput {
  /** The request as the caller made it; never sent itself, only cloned. */
  readonly request: PipelineRequest;
  /** The regions of the arms: the primary first, then the hedges in order. */
  readonly targets: readonly RegionEndpoint[];
  /** Sends one arm through the rest of the pipeline. */
  readonly send: (request: PipelineRequest, arm: ArmLaunch) => Promise<PipelineResponse>;
  readonly strategy: RaceStrategy;
  /** Runs on each arm (`index` 0 is the primary) before it is sent, for example to sign it afresh. */
  readonly prepare?: ((request: PipelineRequest, index: number) => void | Promise<void>) | undefined;
}

/** How a race ended. */
export type RaceOutcome =
  | {
      readonly kind: "decided";
      /** What the caller gets. */
      readonly result: ArmResult;
      /** The arm whose result is returned. */
      readonly returnedIndex: number;
      /** `true` when no arm won and the primary's outcome is returned by default. */
      readonly fallback: boolean;
      readonly arms: HedgeArmDiagnostics[];
      /** `true` when the strategy refused a hedge. */
      readonly hedgeRefused: boolean;
    }
  | { readonly kind: "aborted"; readonly arms: HedgeArmDiagnostics[]; readonly hedgeRefused: boolean };

interface ArmState {
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly reason: HedgeArmReason;
  readonly controller: AbortController;
  readonly startedAt: number;
  endedAt?: number;
  result?: ArmResult;
  aborted?: boolean;
}

function describeError(error: unknown): HedgeArmError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      ...(typeof code === "string" ? { code } : {}),
      message: redactCredentials(error.message).slice(0, 300),
    };
  }
  return { name: typeof error, message: redactCredentials(String(error)).slice(0, 300) };
}

function describeArm(arm: ArmState, raceStart: number, returnedIndex: number | undefined): HedgeArmDiagnostics {
  const record: HedgeArmDiagnostics = {
    region: arm.region.name,
    reason: arm.reason,
    startOffsetMs: Math.round(arm.startedAt - raceStart),
    outcome: arm.aborted ? "aborted" : arm.index === returnedIndex ? "returned" : "lost",
  };
  if (arm.endedAt !== undefined) record.durationMs = Math.round(arm.endedAt - arm.startedAt);
  const result = arm.result;
  if (result === undefined) return record;
  if (result.response === undefined) {
    record.error = describeError(result.error);
    return record;
  }
  const { response } = result;
  record.status = response.status;
  const subStatus = subStatusOf(response);
  if (subStatus !== 0) record.subStatus = subStatus;
  const activityId = response.headers.get(CosmosHeaders.activityId);
  if (activityId !== undefined) record.activityId = activityId;
  const charge = requestChargeOf(response);
  if (charge !== undefined) record.requestCharge = charge;
  return record;
}

/**
 * Races copies of one request across regions. The primary goes out at once;
 * each further arm goes out `strategy.delayBefore(i)` after the previous one,
 * or at once on a `next` verdict. The first `win` verdict decides the race and
 * aborts every other arm; when every arm has settled without a winner, the
 * primary's outcome is returned. The caller's abort signal aborts every arm.
 *
 * The returned promise rejects only when a strategy itself throws: an arm's
 * failure is a result, and a loser that settles after the race is decided is
 * ignored, so no rejection goes unhandled. When the race ends no timer or
 * listener of it remains.
 */
export function runRace(input: RaceInput): Promise<RaceOutcome> {
  const { request, targets, send, strategy, prepare } = input;
  const callerSignal = request.abortSignal;
  const raceStart = performance.now();
  const arms: ArmState[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let decided = false;
  let hedgeRefused = false;
  /** The first arm held back by a `hold` verdict, while the primary was in flight. */
  let held: number | undefined;

  return new Promise<RaceOutcome>((resolve, reject) => {
    const describeAll = (returnedIndex?: number): HedgeArmDiagnostics[] =>
      arms.map((arm) => describeArm(arm, raceStart, returnedIndex));

    const end = (): void => {
      decided = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      callerSignal?.removeEventListener("abort", onCallerAbort);
      const now = performance.now();
      for (const arm of arms) {
        if (arm.result !== undefined) continue;
        arm.aborted = true;
        arm.endedAt = now;
        arm.controller.abort();
        if (arm.index > 0) strategy.release?.(arm.index);
      }
    };

    const decide = (returnedIndex: number, fallback: boolean): void => {
      end();
      const result = arms[returnedIndex]?.result;
      if (result === undefined) throw new Error("A race was decided on an arm without a result.");
      resolve({ kind: "decided", result, returnedIndex, fallback, arms: describeAll(returnedIndex), hedgeRefused });
    };

    function onCallerAbort(): void {
      if (decided) return;
      end();
      resolve({ kind: "aborted", arms: describeAll(), hedgeRefused });
    }

    const canLaunchMore = (): boolean => !hedgeRefused && arms.length < targets.length;

    const scheduleNext = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (!canLaunchMore()) return;
      timer = setTimeout(() => {
        timer = undefined;
        launch("threshold");
      }, strategy.delayBefore(arms.length));
    };

    const settle = (arm: ArmState, result: ArmResult): void => {
      if (decided || arm.aborted) return;
      arm.result = result;
      arm.endedAt = performance.now();
      if (arm.index > 0) strategy.release?.(arm.index);
      const verdict = strategy.judge({ index: arm.index, region: arm.region, result });
      const primarySettled = arms[0]?.result !== undefined;
      if (verdict === "win" || (verdict === "hold" && primarySettled)) {
        decide(arm.index, false);
        return;
      }
      if (verdict === "hold") held ??= arm.index;
      // The primary settled without winning: an answer held back for it wins now.
      if (arm.index === 0 && held !== undefined) {
        decide(held, false);
        return;
      }
      if (verdict === "next") launch(strategy.earlyLaunchReason);
      if (decided || arms.some((other) => other.result === undefined)) return;
      // Nothing is in flight: launch what is left now rather than idle until a timer fires.
      if (canLaunchMore() && launch(strategy.earlyLaunchReason)) return;
      decide(0, true);
    };

    const sendArm = async (arm: ArmState, clone: PipelineRequest): Promise<void> => {
      let result: ArmResult;
      try {
        const preparing = prepare?.(clone, arm.index);
        // A synchronous preparation sends the arm in the same turn; only an asynchronous one is awaited.
        if (preparing !== undefined) {
          await preparing;
          // The race may have ended while the arm was being prepared; an arm
          // that lost before it was sent must not go out at all.
          if (arm.aborted) return;
        }
        result = { response: await send(clone, { index: arm.index, region: arm.region, reason: arm.reason }) };
      } catch (error) {
        result = { error };
      }
      try {
        settle(arm, result);
      } catch (error) {
        // A fault in a strategy must end the race with that error, not leave it to an unhandled rejection.
        if (!decided) end();
        reject(error);
      }
    };

    function launch(reason: HedgeArmReason): boolean {
      const index = arms.length;
      const region = targets[index];
      // Once the strategy has refused a hedge, it is not asked again: a budget
      // freed later must not revive a race that was already cut short.
      if (decided || hedgeRefused || region === undefined) return false;
      if (index > 0 && strategy.admit !== undefined && !strategy.admit(index)) {
        hedgeRefused = true;
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        return false;
      }
      const controller = new AbortController();
      const arm: ArmState = { index, region, reason, controller, startedAt: performance.now() };
      arms.push(arm);
      void sendArm(arm, cloneRequestFor(request, region, controller.signal));
      scheduleNext();
      return true;
    }

    if (callerSignal?.aborted) {
      decided = true;
      resolve({ kind: "aborted", arms: [], hedgeRefused });
      return;
    }
    callerSignal?.addEventListener("abort", onCallerAbort);
    launch("primary");
  });
}
