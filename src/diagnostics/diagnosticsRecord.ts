import { CosmosHeaders } from "../cosmos/headers.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { requestChargeOf, subStatusOf } from "../cosmos/statusTables.js";
import { armOutcome, decidedDurationMs, drainedDurationMs } from "../learning/armFacts.js";
import type { HedgeArmDiagnostics, HedgeArmError } from "./diagnostics.js";
import type { RaceArm } from "../race/race.js";
import { redactCredentials } from "./redact.js";

/**
 * A thrown error reduced to what is safe to publish: its name, its code and
 * its message, each without credentials and bounded (a transport or a
 * policy of the caller's may put anything in any of them).
 */
function describeError(error: unknown): HedgeArmError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: redactCredentials(String(error.name)).slice(0, 100),
      ...(typeof code === "string" ? { code: redactCredentials(code).slice(0, 100) } : {}),
      message: redactCredentials(error.message).slice(0, 300),
    };
  }
  return { name: typeof error, message: redactCredentials(String(error)).slice(0, 300) };
}

function addResult(record: HedgeArmDiagnostics, result: ArmResult): void {
  if (result.response === undefined) {
    record.error = describeError(result.error);
    return;
  }
  const { response } = result;
  record.status = response.status;
  const subStatus = subStatusOf(response);
  if (subStatus !== 0) record.subStatus = subStatus;
  const activityId = response.headers.get(CosmosHeaders.activityId);
  if (activityId !== undefined) record.activityId = activityId;
  const charge = requestChargeOf(response);
  if (charge !== undefined) record.requestCharge = charge;
}

/**
 * The public record of an arm as it stood when its race was decided (or
 * aborted): a drained arm is timed to the decision, without what it got
 * later (see {@link describeDrainedArm}).
 * @param raceStart - when the race started, the origin of `startOffsetMs`.
 * @param returnedIndex - the arm whose outcome the caller got; `undefined` when the caller aborted.
 */
export function describeArm(arm: RaceArm, raceStart: number, returnedIndex: number | undefined): HedgeArmDiagnostics {
  const record: HedgeArmDiagnostics = {
    region: arm.region.name,
    reason: arm.reason,
    startOffsetMs: Math.round(arm.startedAt - raceStart),
    outcome: armOutcome(arm, returnedIndex),
  };
  const durationMs = decidedDurationMs(arm);
  if (durationMs !== undefined) record.durationMs = durationMs;
  if (arm.result !== undefined) addResult(record, arm.result);
  return record;
}

/** The public record of a drained arm once its drain has ended: how it ended, what it got and how long it ran in all. */
export function describeDrainedArm(arm: RaceArm, raceStart: number): HedgeArmDiagnostics {
  const record: HedgeArmDiagnostics = {
    region: arm.region.name,
    reason: arm.reason,
    startOffsetMs: Math.round(arm.startedAt - raceStart),
    outcome: "drained",
  };
  const drain = arm.drain;
  if (drain?.end !== undefined) record.drainEnd = drain.end;
  const durationMs = drainedDurationMs(arm);
  if (durationMs !== undefined) record.durationMs = durationMs;
  if (drain?.result !== undefined) addResult(record, drain.result);
  return record;
}
