import type { ArmResult } from "../cosmos/statusTables.js";
import type { HedgeArmOutcome } from "../diagnostics/diagnostics.js";
import type { RaceArm } from "../race/race.js";

const timeoutErrorCodes: ReadonlySet<string> = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT", "ECONNABORTED"]);

/**
 * How an arm ended, as of its race's decision (see `HedgeArmOutcome`).
 * @param returnedIndex - the arm whose outcome the caller got; `undefined` when the caller aborted.
 */
export function armOutcome(arm: RaceArm, returnedIndex: number | undefined): HedgeArmOutcome {
  return arm.aborted ? "aborted" : arm.drain !== undefined ? "drained" : arm.index === returnedIndex ? "returned" : "lost";
}

/**
 * Milliseconds an arm ran until it settled, was aborted or (drained) its
 * race was decided; whole milliseconds, as the diagnostics show them, so
 * that what is learned and what is published agree.
 */
export function decidedDurationMs(arm: RaceArm): number | undefined {
  const endedAt = arm.endedAt ?? arm.drain?.decidedAt;
  return endedAt === undefined ? undefined : Math.round(endedAt - arm.startedAt);
}

/** Milliseconds a drained arm ran in all, once its drain has ended. */
export function drainedDurationMs(arm: RaceArm): number | undefined {
  const drain = arm.drain;
  return drain === undefined ? undefined : Math.round((drain.endedAt ?? drain.decidedAt) - arm.startedAt);
}

/** A 408, or a transport error that says the request timed out. */
export function timedOut(result: ArmResult | undefined): boolean {
  if (result === undefined) return false;
  if (result.response !== undefined) return result.response.status === 408;
  const { error } = result;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return error.name === "TimeoutError" || (typeof code === "string" && timeoutErrorCodes.has(code));
}
