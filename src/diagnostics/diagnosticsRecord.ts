import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpHeaders, PipelineResponse } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "../cosmos/headers.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { requestChargeOf, subStatusOf, subStatusOfHeader } from "../cosmos/statusTables.js";
import { armOutcome, decidedDurationMs, drainedDurationMs } from "../learning/armFacts.js";
import type { HedgeArmDiagnostics, HedgeArmError, HedgeDiagnostics, HedgeSkipReason } from "./diagnostics.js";
import type { LoneHeaders, SkippedHeaders } from "./diagnostics.js";
import { DeferredRecord } from "./diagnostics.js";
import type { RaceArm } from "../race/race.js";
import type { RegionEndpoint } from "../topology/regionCache.js";
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

/** A header being completed into its request's record. */
type RecordInProgress = DiagnosticsHeader & Partial<HedgeDiagnostics>;

/**
 * Completes a header into the record of a request that was not hedged. The
 * header is made for one request and ends with it, so it becomes the record
 * itself rather than being copied into one.
 */
export function skippedRecord(header: DiagnosticsHeader, skipReason: HedgeSkipReason, totalRequestCharge: number): HedgeDiagnostics {
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
  return record as HedgeDiagnostics;
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
 * The record of a race its primary won alone before any hedge was due (the
 * common case with hedging on), kept as the facts it is built from: the
 * head the policy planned, the primary's times, and its response's status,
 * headers and charge (not its body). The
 * record is built the first time anyone reads it, identical to the one the
 * race would have built, and the same object every time after.
 */
export class LonePrimaryRecord extends DeferredRecord {
  private readonly activityId: string | undefined;
  private readonly subStatus: string | undefined;

  /** Reads what the record needs of the response's headers now, so that the record keeps none of the response. */
  constructor(
    private readonly headers: LoneHeaders,
    private readonly region: RegionEndpoint,
    private readonly startedAt: number,
    private readonly endedAt: number,
    private readonly status: number,
    responseHeaders: HttpHeaders,
    private readonly charge: number | undefined,
  ) {
    super();
    this.activityId = responseHeaders.get(CosmosHeaders.activityId);
    this.subStatus = responseHeaders.get(CosmosHeaders.subStatus);
  }

  protected build(): HedgeDiagnostics {
    const headers = createHttpHeaders();
    if (this.activityId !== undefined) headers.set(CosmosHeaders.activityId, this.activityId);
    if (this.subStatus !== undefined) headers.set(CosmosHeaders.subStatus, this.subStatus);
    if (this.charge !== undefined) headers.set(CosmosHeaders.requestCharge, String(this.charge));
    const arm: RaceArm = {
      index: 0,
      region: this.region,
      reason: "primary",
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      // The status and these headers are all a record reads of a response.
      result: { response: { status: this.status, headers } as PipelineResponse },
    };
    const described = describeArm(arm, this.startedAt, 0);
    return raceRecord(copyHeader(this.headers.head as DiagnosticsHeader), [described], false, "primaryWon", described, true);
  }

  headerValue(): string {
    // A sub-status on an answer that ended the race is rare enough to be written in full.
    if (subStatusOfHeader(this.subStatus) !== 0) return JSON.stringify(this.record);
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
    return skippedRecord(copyHeader(template), template.skipReason ?? "disabled", this.charge);
  }

  headerValue(): string {
    return this.headers.value(this.charge);
  }
}
