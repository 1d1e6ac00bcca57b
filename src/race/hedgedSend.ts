import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { AzureLogger } from "@azure/logger";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import { CosmosHeaders, hedgeDiagnosticsHeaderName } from "../cosmos/headers.js";
import { requestChargeOf } from "../cosmos/statusTables.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { HedgeArmDiagnostics, HedgeArmReason, HedgeDiagnostics, HedgeSkipReason } from "../diagnostics/diagnostics.js";
import type { DeferredRecord, SkippedHeaders } from "../diagnostics/diagnostics.js";
import { attachHedgeDiagnostics } from "../diagnostics/diagnostics.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { collecting, recordForCollectors } from "../diagnostics/diagnosticsCollector.js";
import { finalWhen } from "../diagnostics/final.js";
import { DeferredSkippedRecord, describeArm, describeDrainedArm, raceRecord, skippedRecord } from "../diagnostics/diagnosticsRecord.js";
import { noteAttemptRecord, noteSdkRequestEnded, noteSdkRequestSent } from "../diagnostics/dispatchRecording.js";
import type { LoserDrain } from "./loserDrain.js";
import type { HedgePlanner, SkipPlan } from "../planning/planner.js";
import type { RequestHedgingControls } from "../request/requestModel.js";
import type { DiagnosticsHeader, RaceLearner } from "../diagnostics/diagnosticsHeader.js";
import type { RaceArm, RaceInput, RaceOutcome, RaceStrategy } from "./race.js";
import { logRace } from "../diagnostics/operatorLog.js";
import { HedgingRace } from "./hedgingRace.js";
import type { PendingRace } from "./pendingRead.js";
import type { RaceTrace } from "../diagnostics/tracing.js";
import { startRaceTrace } from "../diagnostics/tracing.js";
import { socketFreeFor } from "./drainSockets.js";

/** Where a policy's diagnostics go besides the response: its callback, guarded, and its learner. */
export interface DiagnosticsSink {
  readonly logger: AzureLogger;
  readonly onDiagnostics?: ((diagnostics: HedgeDiagnostics) => void) | undefined;
  readonly learner?: RaceLearner | undefined;
}

/**
 * Publishes a request's record on its response or error, as its
 * operation's latest (the operation the request is an attempt of, unless a
 * sender that keeps nothing on the request names it), and to those who take
 * every record.
 */
function publish(sink: DiagnosticsSink, request: PipelineRequest, target: unknown, diagnostics: HedgeDiagnostics, operation?: OperationDetection): void {
  if (typeof target === "object" && target !== null) attachHedgeDiagnostics(target, diagnostics);
  if (operation !== undefined) operation.lastRecord = diagnostics;
  else noteAttemptRecord(request, diagnostics);
  deliver(sink, diagnostics);
}

/**
 * Publishes the deferred record of a read that ended before any hedge was
 * due (see `PendingRead`): as its operation's latest, which goes with what
 * the SDK returns, and in the response's header (with the response too when
 * there is no operation); built now only for those who take every record (a
 * callback, a collecting block). The OpenTelemetry instruments count no
 * such read.
 */
export function publishDeferred(sink: DiagnosticsSink, response: PipelineResponse, deferred: DeferredRecord, operation: OperationDetection | undefined): void {
  if (operation === undefined) attachHedgeDiagnostics(response, deferred);
  else {
    // Set on the response, the header would cost every read a header store and the SDK one more header to copy; the
    // operation plugin writes it on what the SDK makes of the response instead (a feed's page has no such plugin).
    if (!operation.recordGoesOnOutcome) response.headers.set(hedgeDiagnosticsHeaderName, deferred.headerValue());
    operation.lastRecord = deferred;
  }
  if (sink.onDiagnostics !== undefined || collecting()) deliver(sink, deferred.record);
}

/** Hands a record to the collecting blocks, the metrics and the policy's callback. */
function deliver(sink: DiagnosticsSink, diagnostics: HedgeDiagnostics): void {
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

/**
 * A request a plain attempt's lazy way sends unhedged: its record deferred
 * until read (see `DeferredSkippedRecord`), and its operation's notes taken
 * by the sender, since nothing is kept on the request.
 */
export interface LazySkip {
  readonly headers: SkippedHeaders;
  readonly operation: OperationDetection | undefined;
}

/**
 * Sends a request unhedged, where it is addressed, and records why. The
 * learner is told of the response as it arrives, except for a later page of
 * a metadata feed (`"continuationPage"`), which hedging never considered.
 * With `lazy`, the request is a plain attempt sent lazily (see
 * {@link LazySkip}); `skip.header` is then its plan's shared header, which
 * is not completed in place.
 */
export function sendSkipped(
  request: PipelineRequest,
  next: SendRequest,
  skip: Pick<SkipPlan, "reason" | "header">,
  sink: DiagnosticsSink,
  lazy?: LazySkip,
): Promise<PipelineResponse> {
  const { header, reason } = skip;
  const region = header.primaryRegion;
  const operation = lazy?.operation;
  const failed = (error: unknown): never => {
    if (operation !== undefined) noteSdkRequestEnded(operation, region, undefined);
    sink.learner?.learnSkipped(region, { error });
    const record = lazy === undefined ? skippedRecord(header, reason, 0) : new DeferredSkippedRecord(lazy.headers, 0).record;
    publish(sink, request, error, record, operation);
    throw error;
  };
  if (operation !== undefined) noteSdkRequestSent(operation, region);
  let sent: Promise<PipelineResponse>;
  try {
    sent = next(request);
  } catch (error) {
    // A send that throws rather than rejects fails the request as a rejection would, with its record.
    return Promise.reject(error).catch(failed);
  }
  // Chained rather than `async`: most requests of a client with hedging off take this path.
  return sent.then((response) => {
    const charge = (operation !== undefined ? noteSdkRequestEnded(operation, region, response) : requestChargeOf(response)) ?? 0;
    if (reason !== "continuationPage") sink.learner?.noteResponse(region, response);
    sink.learner?.learnSkipped(region);
    if (lazy === undefined) publish(sink, request, response, skippedRecord(header, reason, charge));
    else publishDeferred(sink, response, new DeferredSkippedRecord(lazy.headers, charge), operation);
    return response;
  }, failed);
}

/** A race to run: where its primary goes, how its hedges are planned, and its strategy. */
export interface HedgePlan {
  /** The region the request is addressed to, where the primary goes. */
  readonly primaryRegion: RegionEndpoint;
  /** The hedges in launch order, when the plan needed them up front (see `RacePlan.hedges`). */
  readonly hedges?: readonly RegionEndpoint[] | undefined;
  /**
   * When the first hedge is due, plans the hedges (or says why there are
   * none) from the request's operation and controls, or drops from those
   * planned up front the regions excluded or throttled since: the
   * exclusions then in force bind every hedge. Fields rather than a
   * closure, as every request makes a plan and nearly none hedges.
   */
  readonly planner: Pick<HedgePlanner, "hedges" | "stillOpen">;
  readonly operation: OperationKind;
  readonly controls: RequestHedgingControls;
  readonly strategy: RaceStrategy;
  readonly signer?: RequestSigner | undefined;
  /**
   * Send the hedges (never the primary) without `x-ms-session-token`, so
   * that a region lagging behind the session's writes can still answer.
   */
  readonly hedgesWithoutSessionToken?: boolean | undefined;
  /** Leaves losers to finish within these bounds; `undefined` aborts them. */
  readonly drain?: LoserDrain | undefined;
  /** The caller's own bound on the primary (see `RaceInput.callerTimeoutMs`). */
  readonly callerTimeoutMs?: number | undefined;
  /** Gives the primary an abort signal of the race's up front, so that it can be aborted when it loses (see `RaceInput.eager`). */
  readonly eager?: boolean | undefined;
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
 * returned arm's response, its error rethrown, or, when the caller aborted,
 * the error its primary ended with (its transport's own `AbortError`, as
 * unhedged). The diagnostics go on whichever of these the caller gets.
 * The race's span starts when its first hedge is due: a request that never
 * hedges is not traced.
 */
export function sendHedged(
  request: PipelineRequest,
  next: SendRequest,
  header: DiagnosticsHeader,
  plan: HedgePlan,
  sink: DiagnosticsSink,
): Promise<PipelineResponse> {
  return new HedgingRace(new HedgedRequest(request, next, header, plan, sink)).run();
}

/**
 * The race of a read sent lazily (see `PendingRead`), built when its first
 * hedge is due or its primary settled with a result to judge: it adopts the
 * primary in flight, sent at `startedAt`, and goes on as
 * {@link sendHedged}'s would from there.
 */
export function adoptHedged(
  request: PipelineRequest,
  next: SendRequest,
  header: DiagnosticsHeader,
  plan: HedgePlan,
  sink: DiagnosticsSink,
  startedAt: number,
  thresholdPassed: boolean,
): PendingRace {
  const race = new HedgingRace(new HedgedRequest(request, next, header, plan, sink), startedAt);
  return { answer: race.adopt(thresholdPassed), primaryEnded: (result) => race.primaryEnded(result) };
}

/**
 * One hedged request as its race sees it: the race's input, and what turns
 * its outcome into the caller's answer. One object with methods rather than
 * a closure per hook, as every request makes one.
 */
class HedgedRequest implements RaceInput<PipelineResponse> {
  readonly primaryRegion: RegionEndpoint;
  readonly strategy: RaceStrategy;
  readonly drain: LoserDrain | undefined;
  readonly callerTimeoutMs: number | undefined;
  readonly eager: boolean | undefined;
  readonly onResponse: RaceInput["onResponse"];
  private trace: RaceTrace | undefined;
  private dropSessionToken = false;

  constructor(
    readonly request: PipelineRequest,
    private readonly next: SendRequest,
    private readonly header: DiagnosticsHeader,
    private readonly plan: HedgePlan,
    private readonly sink: DiagnosticsSink,
  ) {
    this.primaryRegion = plan.primaryRegion;
    this.strategy = plan.strategy;
    this.drain = plan.drain;
    this.callerTimeoutMs = plan.callerTimeoutMs;
    this.eager = plan.eager;
    this.onResponse = sink.learner?.noteResponse;
  }

  send(arm: PipelineRequest, index: number, region: RegionEndpoint, reason: HedgeArmReason): Promise<PipelineResponse> {
    return this.trace === undefined ? this.next(arm) : this.trace.sendArm(this.next, arm, index, region, reason);
  }

  /** The first hedge is due: its plan, and the race's span from now on. */
  hedges(): readonly RegionEndpoint[] | HedgeSkipReason {
    const { plan } = this;
    const hedges =
      plan.hedges === undefined
        ? plan.planner.hedges(this.request, plan.operation, this.primaryRegion, plan.controls, this.header)
        : plan.planner.stillOpen(this.request, plan.operation, this.primaryRegion, plan.controls, plan.hedges);
    if (typeof hedges === "string") return hedges;
    const { request } = this;
    this.dropSessionToken = this.plan.hedgesWithoutSessionToken === true && request.headers.has(CosmosHeaders.sessionToken);
    this.trace = startRaceTrace(request, this.header);
    this.trace.openPrimary(this.primaryRegion);
    return hedges;
  }

  /** Whether a hedge launched now may go to `region`: it is neither excluded nor throttled now. */
  mayHedgeInto(region: RegionEndpoint): boolean {
    const { plan } = this;
    if (!socketFreeFor(this.request, region.endpoint)) return false;
    return typeof plan.planner.stillOpen(this.request, plan.operation, this.primaryRegion, plan.controls, [region]) !== "string";
  }

  prepare(arm: PipelineRequest): void | Promise<void> {
    if (this.dropSessionToken) arm.headers.delete(CosmosHeaders.sessionToken);
    return this.plan.signer?.(arm);
  }

  conclude(outcome: RaceOutcome): PipelineResponse {
    return conclude(this.request, this.header, outcome, this.sink, this.trace, this.dropSessionToken);
  }

  fail(error: unknown): void {
    this.trace?.end(undefined, undefined, error);
  }
}

/** Turns a race's outcome into the caller's response or error, with its record, log line, span and learning. */
function conclude(
  request: PipelineRequest,
  header: DiagnosticsHeader,
  outcome: RaceOutcome,
  sink: DiagnosticsSink,
  trace: RaceTrace | undefined,
  dropSessionToken: boolean,
): PipelineResponse {
  // Read now: the header becomes the published record, which the caller may change.
  const { operation } = header;
  const returnedIndex = outcome.kind === "decided" ? outcome.returnedIndex : undefined;
  sink.learner?.learn(header, outcome, request);
  if (outcome.skipReason !== undefined && outcome.arms.length <= 1 && outcome.kind === "decided") {
    // The plan found no hedge to send when one was due: the request ran unhedged, and its record says why.
    const response = outcome.result.response;
    const diagnostics = skippedRecord(header, outcome.skipReason, response === undefined ? 0 : (requestChargeOf(response) ?? 0));
    publish(sink, request, response ?? outcome.result.error, diagnostics);
    if (response === undefined) throw outcome.result.error;
    return response;
  }
  const primary = outcome.arms[0];
  if (trace !== undefined && primary !== undefined && primary.drain === undefined) trace.closePrimary(primary);
  // Mapped rather than pushed: an empty array's first push reserves room for seventeen arms, and most races have one.
  const arms = outcome.arms.map((arm): HedgeArmDiagnostics => {
    const described = describeArm(arm, outcome.startedAt, returnedIndex);
    if (dropSessionToken && arm.index > 0) described.sessionTokenOmitted = true;
    return described;
  });
  if (outcome.kind === "aborted") {
    const { error } = outcome;
    // A request whose plan found no hedge when one was due, aborted afterwards, still says why it had none.
    const aborted = raceRecord(header, arms, outcome.hedgeRefused, "aborted", undefined, true, outcome.arms.length <= 1 ? outcome.skipReason : undefined);
    finish(sink, request, trace, error, aborted, undefined, error);
    throw error;
  }
  const terminalState = outcome.fallback ? "primaryOutcome" : outcome.returnedIndex > 0 ? "hedgeWon" : "primaryWon";
  const diagnostics = raceRecord(header, arms, outcome.hedgeRefused, terminalState, arms[outcome.returnedIndex], outcome.drains.length === 0);
  const response = outcome.result.response === undefined ? undefined : asAnswerTo(outcome.result.response, request);
  // Before the record is published, so that whoever gets it can wait for its drained arms.
  if (outcome.drains.length > 0) {
    finalWhen(
      diagnostics,
      outcome.drains.map((drained) =>
        drained.then((arm) => {
          if (arm.index === 0) trace?.closePrimary(arm);
          completeDrain(sink, operation, diagnostics, outcome.startedAt, arm);
        }),
      ),
    );
  }
  finish(sink, request, trace, response ?? outcome.result.error, diagnostics, response, response === undefined ? outcome.result.error : undefined);
  if (response === undefined) throw outcome.result.error;
  return response;
}

/** Logs, ends the span of and publishes a race's record, on `target` (its response or error). */
function finish(
  sink: DiagnosticsSink,
  request: PipelineRequest,
  trace: RaceTrace | undefined,
  target: unknown,
  diagnostics: HedgeDiagnostics,
  response: PipelineResponse | undefined,
  error: unknown,
): void {
  // The log and the span read the record before it is published: from then on it is the caller's, who may change it.
  logRace(sink, diagnostics);
  trace?.end(diagnostics, response, error);
  publish(sink, request, target, diagnostics);
}

/**
 * The arm's response as the answer to `request`: upper policies expect the
 * response of the request they sent, not of a clone. A response that takes
 * no change (a transport or policy of the caller's froze it) is answered by
 * a copy, rather than failing a request that succeeded.
 */
function asAnswerTo(response: PipelineResponse, request: PipelineRequest): PipelineResponse {
  // The primary's response usually answers the caller's request already.
  if (response.request === request) return response;
  return Reflect.set(response, "request", request) ? response : { ...response, request };
}
