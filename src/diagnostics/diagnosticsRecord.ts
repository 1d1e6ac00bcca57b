import type { HttpHeaders } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "../cosmos/headers.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { requestChargeOf, subStatusOf, subStatusOfHeader } from "../cosmos/statusTables.js";
import { armOutcome, decidedDurationMs, drainedDurationMs } from "../learning/armFacts.js";
import type { HedgeArmDiagnostics, HedgeArmError, HedgeDiagnostics, HedgeSkipReason } from "./diagnostics.js";
import type { LoneHeaders, SkippedDiagnostics, SkippedHeaders } from "./diagnostics.js";
import { DeferredRecord } from "./diagnostics.js";
import type { RaceArm } from "../race/race.js";
import type { DiagnosticsHeader } from "./diagnosticsHeader.js";
import { copyHeader } from "./diagnosticsHeader.js";
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
  addResponseFacts(record, response.status, subStatusOf(response), response.headers.get(CosmosHeaders.activityId), requestChargeOf(response));
}

/** What an arm's record shows of the response it got. */
function addResponseFacts(record: HedgeArmDiagnostics, status: number, subStatus: number, activityId: string | undefined, charge: number | undefined): void {
  record.status = status;
  if (subStatus !== 0) record.subStatus = subStatus;
  if (activityId !== undefined) record.activityId = activityId;
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

/** A header being completed into its request's record. */
type RecordInProgress = DiagnosticsHeader & Partial<HedgeDiagnostics>;

/**
 * Completes a header into the record of a request that was not hedged. The
 * header is made for one request and ends with it, so it becomes the record
 * itself rather than being copied into one.
 */
export function skippedRecord(header: DiagnosticsHeader, skipReason: HedgeSkipReason, totalRequestCharge: number): SkippedDiagnostics {
  const record: RecordInProgress = header;
  record.arms = [];
  record.hedgeFired = false;
  record.hedgeWon = false;
  if (header.primaryRegion !== undefined) record.winningRegion = header.primaryRegion;
  record.terminalState = "skipped";
  record.skipReason = skipReason;
  // Last, as the diagnostics header writes it after a cached head.
  record.totalRequestCharge = totalRequestCharge;
  record.final = true;
  return record as SkippedDiagnostics;
}

/** Completes a header into the record of a race, in place as {@link skippedRecord} does. */
export function raceRecord(
  header: DiagnosticsHeader,
  arms: HedgeArmDiagnostics[],
  hedgeRefused: boolean,
  terminalState: HedgeDiagnostics["terminalState"],
  returned: HedgeArmDiagnostics | undefined,
  final: boolean,
  skipReason?: HedgeSkipReason,
): HedgeDiagnostics {
  const record: RecordInProgress = header;
  record.arms = arms;
  record.hedgeFired = arms.length > 1;
  record.totalRequestCharge = totalCharge(arms);
  record.final = final;
  if (hedgeRefused) record.skipReason = "budgetExhausted";
  else if (skipReason !== undefined) record.skipReason = skipReason;
  record.hedgeWon = terminalState === "hedgeWon";
  record.terminalState = terminalState;
  if (returned !== undefined) {
    record.winningRegion = returned.region;
    if (returned.activityId !== undefined) record.winningActivityId = returned.activityId;
  }
  return record as HedgeDiagnostics;
}

function totalCharge(arms: readonly HedgeArmDiagnostics[]): number {
  return arms.reduce((sum, arm) => sum + (arm.requestCharge ?? 0), 0);
}

/**
 * The record of a race that ended on its primary's answer before any hedge
 * was due: won alone (the common case with hedging on), or, with
 * `fallback`, a transient answer handed back to the SDK's retry (the race's
 * `primaryOutcome`). Kept as the facts it is built from: the head the
 * policy planned, the primary's duration, and its response's status,
 * sub-status, activity id and charge (nothing else of the response). The
 * record is built the first time anyone reads it, as {@link describeArm}
 * and {@link raceRecord} build the race's, and is the same object every
 * time after.
 */
export class LonePrimaryRecord extends DeferredRecord {
  private readonly subStatus: number;
  private readonly activityId: string | undefined;

  constructor(
    private readonly headers: LoneHeaders,
    private readonly durationMs: number,
    private readonly status: number,
    responseHeaders: HttpHeaders,
    private readonly charge: number | undefined,
    private readonly fallback = false,
  ) {
    super();
    this.subStatus = subStatusOfHeader(responseHeaders.get(CosmosHeaders.subStatus));
    this.activityId = responseHeaders.get(CosmosHeaders.activityId);
  }

  protected build(): HedgeDiagnostics {
    const head = this.headers.head as DiagnosticsHeader;
    const arm: HedgeArmDiagnostics = { region: head.primaryRegion ?? "", reason: "primary", startOffsetMs: 0, outcome: "returned", durationMs: this.durationMs };
    addResponseFacts(arm, this.status, this.subStatus, this.activityId, this.charge);
    return raceRecord(copyHeader(head), [arm], false, this.fallback ? "primaryOutcome" : "primaryWon", arm, true);
  }

  headerValue(): string {
    // A sub-status, or a transient answer, on the answer that ended the race is rare enough to be written in full.
    if (this.subStatus !== 0 || this.fallback) return JSON.stringify(this.record);
    return this.headers.value(this.status, this.charge);
  }
}

/**
 * The record of a request sent unhedged, kept as its charge and a template
 * shared by every such request of its kind and region (see
 * {@link SkippedHeaders}) until someone reads it.
 */
export class DeferredSkippedRecord extends DeferredRecord {
  constructor(
    private readonly headers: SkippedHeaders,
    private readonly charge: number,
  ) {
    super();
  }

  protected build(): HedgeDiagnostics {
    const { template } = this.headers;
    return skippedRecord(copyHeader(template), template.skipReason, this.charge);
  }

  headerValue(): string {
    return this.headers.value(this.charge);
  }
}
