import { AbortError } from "@azure/abort-controller";
import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { AzureLogger } from "@azure/logger";
import type { FeedPins } from "../caches/feedPins.js";
import type { RegionCache, RegionEndpoint } from "../caches/regionCache.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import { CosmosHeaders } from "../cosmos/headers.js";
import { requestChargeOf } from "../cosmos/statusTables.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { HedgeArmDiagnostics, HedgeDiagnostics, HedgeSkipReason } from "./diagnostics.js";
import { attachHedgeDiagnostics } from "./diagnostics.js";
import { recordForCollectors } from "./diagnosticsCollector.js";
import { finalWhen } from "../diagnostics/final.js";
import { describeArm, describeDrainedArm } from "./diagnosticsRecord.js";
import type { LoserDrain } from "./loserDrain.js";
import type { SkipPlan } from "./planner.js";
import type { RaceArm, RaceOutcome, RaceStrategy } from "./race.js";
import type { RequestHedgingControls } from "./requestControls.js";
import { logRace } from "./operatorLog.js";
import { retarget } from "./cloneRequest.js";
import { runRace } from "./race.js";
import { feedPageTarget } from "./targets.js";
import { startRaceTrace } from "./tracing.js";

/**
 * The part of a diagnostics record that a policy knows before it sends
 * anything. Each request gets its own, which becomes its record when it ends.
 */
export type DiagnosticsHeader = Pick<
  HedgeDiagnostics,
  | "policy"
  | "operation"
  | "thresholdMs"
  | "thresholdStepMs"
  | "thresholdSource"
  | "thresholdRegion"
  | "primaryRegion"
  | "routing"
  | "ranking"
>;

/**
 * The diagnostics header of a request: its policy, its operation, the region
 * it addresses and what routing did first. A fresh object per request, since
 * it becomes that request's record; fields are set rather than spread in, as
 * every request makes one.
 */
export function diagnosticsHeader(
  policy: HedgeDiagnostics["policy"],
  operation: HedgeDiagnostics["operation"],
  region: RegionEndpoint | undefined,
  controls: RequestHedgingControls,
): DiagnosticsHeader {
  const header: DiagnosticsHeader = { policy, operation };
  if (region !== undefined) header.primaryRegion = region.name;
  if (controls.routing !== undefined) header.routing = controls.routing;
  return header;
}

/**
 * What learns from the raw outcome of each request (region health): never
 * from the public record, which is redacted and rounded for people.
 */
export interface RaceLearner {
  /** Told of each response a region gave, as it arrives; a property, safe to hand on unbound. */
  readonly noteResponse: (region: string | undefined, response: PipelineResponse) => void;
  /** A request sent unhedged, once it has ended; `region` is the one it went to, when known. */
  learnSkipped(region: string | undefined): void;
  /** A race once it is decided or aborted, with what was planned for it. */
  learn(header: DiagnosticsHeader, outcome: RaceOutcome): void;
  /** A drained loser once its drain has ended. */
  learnDrained(operation: OperationKind, arm: RaceArm): void;
}

/** Where a policy's diagnostics go besides the response: its callback, guarded, and its learner. */
export interface DiagnosticsSink {
  readonly logger: AzureLogger;
  readonly onDiagnostics?: ((diagnostics: HedgeDiagnostics) => void) | undefined;
  readonly learner?: RaceLearner | undefined;
}

function publish(sink: DiagnosticsSink, target: unknown, diagnostics: HedgeDiagnostics): void {
  if (typeof target === "object" && target !== null) attachHedgeDiagnostics(target, diagnostics);
  recordForCollectors(diagnostics);
  if (sink.onDiagnostics === undefined) return;
  // A metrics callback must never break the request it describes, whether it throws or returns a promise that rejects.
  const ignore = (error: unknown): void =>
    sink.logger.warning(`onDiagnostics failed and was ignored: ${error instanceof Error ? error.name : typeof error}`);
  try {
    const returned: unknown = sink.onDiagnostics(diagnostics);
    if (isThenable(returned)) returned.then(undefined, ignore);
  } catch (error) {
    ignore(error);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** A header being completed into its request's record. */
type RecordInProgress = DiagnosticsHeader & Partial<HedgeDiagnostics>;

/**
 * Completes a header into the record of a request that was not hedged. The
 * header is made for one request and ends with it, so it becomes the record
 * itself rather than being copied into one.
 */
function skippedRecord(header: DiagnosticsHeader, skipReason: HedgeSkipReason, totalRequestCharge: number): HedgeDiagnostics {
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
function raceRecord(
  header: DiagnosticsHeader,
  arms: HedgeArmDiagnostics[],
  hedgeRefused: boolean,
  terminalState: HedgeDiagnostics["terminalState"],
  returned: HedgeArmDiagnostics | undefined,
  final: boolean,
): HedgeDiagnostics {
  const record: RecordInProgress = header;
  record.arms = arms;
  record.hedgeFired = arms.length > 1;
  record.totalRequestCharge = totalCharge(arms);
  record.final = final;
  if (hedgeRefused) record.skipReason = "budgetExhausted";
  record.hedgeWon = terminalState === "hedgeWon";
  record.terminalState = terminalState;
  if (returned !== undefined) {
    record.winningRegion = returned.region;
    if (returned.activityId !== undefined) record.winningActivityId = returned.activityId;
  }
  return record as HedgeDiagnostics;
}

/**
 * Sends a request unhedged, where it is addressed, and records why. With
 * `pins` (a feed's first page, or a later one), the next page is pinned to
 * `servedBy`, the region this one went to. The learner is told of the
 * response as it arrives, except for a later page (`"continuationPage"`),
 * sent where its token points.
 */
export async function sendSkipped(
  request: PipelineRequest,
  next: SendRequest,
  skip: Pick<SkipPlan, "reason" | "header">,
  sink: DiagnosticsSink,
  pins?: FeedPins,
  servedBy?: RegionEndpoint,
): Promise<PipelineResponse> {
  const { header, reason } = skip;
  let response: PipelineResponse;
  try {
    response = await next(request);
  } catch (error) {
    sink.learner?.learnSkipped(header.primaryRegion);
    publish(sink, error, skippedRecord(header, reason, 0));
    throw error;
  }
  if (reason !== "continuationPage") sink.learner?.noteResponse(header.primaryRegion, response);
  sink.learner?.learnSkipped(header.primaryRegion);
  publish(sink, response, skippedRecord(header, reason, requestChargeOf(response) ?? 0));
  if (pins !== undefined && servedBy !== undefined) pins.pinNextPage(request, response, servedBy);
  return response;
}

function totalCharge(arms: readonly HedgeArmDiagnostics[]): number {
  return arms.reduce((sum, arm) => sum + (arm.requestCharge ?? 0), 0);
}

/** A race to run: its arms' regions (the primary first) and its strategy. */
export interface HedgePlan {
  readonly targets: readonly RegionEndpoint[];
  readonly strategy: RaceStrategy;
  readonly signer?: RequestSigner | undefined;
  /**
   * Send the hedges (never the primary) without `x-ms-session-token`, so
   * that a region lagging behind the session's writes can still answer.
   */
  readonly hedgesWithoutSessionToken?: boolean | undefined;
  /** A feed's first page: the next page is pinned to the region whose response is returned. */
  readonly pins?: FeedPins | undefined;
  /** Leaves losers to finish within these bounds; `undefined` aborts them. */
  readonly drain?: LoserDrain | undefined;
}

/**
 * Completes a published record when a drained loser's drain ends: the arm's
 * final status, charge and duration replace what was known at the decision,
 * and its charge joins the total. The response header keeps the snapshot.
 * Learning reads the raw arm first: the caller owns the published record and
 * may have frozen it (an immutable store does), which keeps its snapshot
 * instead; this runs after the request has ended, where a throw would be an
 * unhandled rejection.
 */
function completeDrain(sink: DiagnosticsSink, operation: OperationKind, diagnostics: HedgeDiagnostics, raceStart: number, arm: RaceArm): void {
  if (sink.learner !== undefined) {
    try {
      sink.learner.learnDrained(operation, arm);
    } catch (error) {
      sink.logger.warning(`Learning from a drained arm failed and was ignored: ${error instanceof Error ? error.name : typeof error}`);
    }
  }
  try {
    const published = diagnostics.arms[arm.index];
    if (published === undefined) return;
    const final = describeDrainedArm(arm, raceStart);
    Object.assign(published, final);
    diagnostics.totalRequestCharge += final.requestCharge ?? 0;
  } catch (error) {
    sink.logger.verbose(`A drained arm's record could not be completed (the caller froze or changed it): ${error instanceof Error ? error.name : typeof error}`);
  }
}

/**
 * Runs the race and turns its outcome into what the caller expects: the
 * returned arm's response, its error rethrown, or an `AbortError` when the
 * caller aborted. The diagnostics go on whichever of these the caller gets.
 */
export async function sendHedged(
  request: PipelineRequest,
  next: SendRequest,
  header: DiagnosticsHeader,
  plan: HedgePlan,
  sink: DiagnosticsSink,
): Promise<PipelineResponse> {
  const { signer } = plan;
  // Read now: the header becomes the published record, which the caller may change.
  const { operation } = header;
  const dropSessionToken = plan.hedgesWithoutSessionToken === true && request.headers.has(CosmosHeaders.sessionToken);
  const trace = startRaceTrace(request, header);
  let outcome: RaceOutcome;
  try {
    outcome = await runRace({
      request,
      targets: plan.targets,
      send: trace.traceArms(next),
      strategy: plan.strategy,
      prepare: (arm, index) => {
        if (index === 0) {
          // The SDK signed the primary a moment ago; only a request nobody signed yet (a core-client pipeline's) needs it.
          return arm.headers.has(CosmosHeaders.authorization) ? undefined : signer?.(arm);
        }
        if (dropSessionToken) arm.headers.delete(CosmosHeaders.sessionToken);
        return signer?.(arm);
      },
      drain: plan.drain,
      onResponse: sink.learner?.noteResponse,
    });
  } catch (error) {
    trace.end(undefined, undefined, error);
    throw error;
  }
  const returnedIndex = outcome.kind === "decided" ? outcome.returnedIndex : undefined;
  const arms = outcome.arms.map((arm) => describeArm(arm, outcome.startedAt, returnedIndex));
  if (dropSessionToken) {
    for (let index = 1; index < arms.length; index++) (arms[index] as HedgeArmDiagnostics).sessionTokenOmitted = true;
  }
  sink.learner?.learn(header, outcome);
  const finish = (target: unknown, diagnostics: HedgeDiagnostics, response?: PipelineResponse, error?: unknown): void => {
    // The log and the span read the record before it is published: from then on it is the caller's, who may change it.
    logRace(sink, diagnostics);
    trace.end(diagnostics, response, error);
    publish(sink, target, diagnostics);
  };
  if (outcome.kind === "aborted") {
    const error = new AbortError("The operation was aborted.");
    finish(error, raceRecord(header, arms, outcome.hedgeRefused, "aborted", undefined, true), undefined, error);
    throw error;
  }
  const terminalState = outcome.fallback ? "primaryOutcome" : outcome.returnedIndex > 0 ? "hedgeWon" : "primaryWon";
  const diagnostics = raceRecord(header, arms, outcome.hedgeRefused, terminalState, arms[outcome.returnedIndex], outcome.drains.length === 0);
  const response = outcome.result.response === undefined ? undefined : asAnswerTo(outcome.result.response, request);
  const returnedRegion = plan.targets[outcome.returnedIndex];
  if (response !== undefined && returnedRegion !== undefined) plan.pins?.pinNextPage(request, response, returnedRegion);
  // Before the record is published, so that whoever gets it can wait for its drained arms.
  if (outcome.drains.length > 0) {
    finalWhen(diagnostics, outcome.drains.map((drained) => drained.then((arm) => completeDrain(sink, operation, diagnostics, outcome.startedAt, arm))));
  }
  finish(response ?? outcome.result.error, diagnostics, response, response === undefined ? outcome.result.error : undefined);
  if (response === undefined) throw outcome.result.error;
  return response;
}

/**
 * The arm's response as the answer to `request`: upper policies expect the
 * response of the request they sent, not of a clone. A response that takes
 * no change (a transport or policy of the caller's froze it) is answered by
 * a copy, rather than failing a request that succeeded.
 */
function asAnswerTo(response: PipelineResponse, request: PipelineRequest): PipelineResponse {
  return Reflect.set(response, "request", request) ? response : { ...response, request };
}

/**
 * Sends a later page of a feed, unhedged, to the region that issued its
 * token (see {@link feedPageTarget}: a request's own region and its
 * exclusions win over that), and pins the page after it to the region that
 * served this one. The diagnostics name the region the page went to.
 */
export function sendLaterPage(
  policy: HedgeDiagnostics["policy"],
  operation: HedgeDiagnostics["operation"],
  feed: { readonly pins: FeedPins; readonly regions: RegionCache },
  request: PipelineRequest,
  next: SendRequest,
  sink: DiagnosticsSink,
  controls: RequestHedgingControls,
): Promise<PipelineResponse> {
  const issuer = feedPageTarget(feed.pins, feed.regions, request, controls);
  if (issuer !== undefined) request.url = retarget(request.url, issuer);
  const region = issuer ?? feed.regions.regionOf(request.url);
  return sendSkipped(request, next, { reason: "continuationPage", header: diagnosticsHeader(policy, operation, region, controls) }, sink, feed.pins, region);
}
