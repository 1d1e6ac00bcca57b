import { keepAttemptContext } from "../cosmos/sdkBookkeeping.js";
import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { regionCacheOption } from "../topology/regionCache.js";
import { describe, optionalBoolean, optionalFunction, optionKeys, optionsObject, orDefault, positiveMilliseconds, readOnce } from "../options.js";
import type { RegionRouting } from "../learning/regionRanking.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { latencyClassOf } from "../learning/latencyWindows.js";
import { documentKinds, documentReadKinds, documentWriteKinds } from "../cosmos/operationKind.js";
import type { AdaptiveThresholdOptions, AdaptiveThresholdSettings } from "../planning/adaptiveThreshold.js";
import { isAdaptiveThreshold, resolveAdaptiveThreshold } from "../planning/adaptiveThreshold.js";
import type { HedgeDiagnostics } from "../diagnostics/diagnostics.js";
import type { DiagnosticsSink } from "../race/hedgedSend.js";
import { adoptHedged, publishDeferred, sendHedged, sendSkipped } from "../race/hedgedSend.js";
import type { PendingReadHost } from "../race/pendingRead.js";
import { PendingRead } from "../race/pendingRead.js";
import { ThresholdTimers } from "../race/thresholdTimers.js";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { noteSdkRequestEnded, noteSdkRequestSent } from "../diagnostics/dispatchRecording.js";
import { LonePrimaryRecord, skippedRecord } from "../diagnostics/diagnosticsRecord.js";
import { LoneHeaders, SkippedHeaders } from "../diagnostics/diagnostics.js";
import { copyHeader } from "../diagnostics/diagnosticsHeader.js";
import { isFinalStatus, requestChargeOf, subStatusOf } from "../cosmos/statusTables.js";
import { plainSdkControls } from "../request/requestControls.js";
import type { RacePlan, SkipPlan } from "../planning/planner.js";
import type { AccountTopology } from "../topology/regionCache.js";
import { isResendableBody } from "../race/cloneRequest.js";
import type { HedgeLoadBudgetOptions } from "../budget/loadBudget.js";
import { LoadBudget, resolveLoadBudget } from "../budget/loadBudget.js";
import type { LoserDrain, LoserDrainOptions } from "../race/loserDrain.js";
import { resolveLoserDrain } from "../race/loserDrain.js";
import type { HedgingMetrics } from "../diagnostics/metrics.js";
import { HedgePlanner } from "../planning/planner.js";
import { DocumentRaceStrategy } from "../race/raceStrategies.js";
import type { RacePrimary } from "../race/raceStrategies.js";
import { RegionHealth } from "../learning/regionHealth.js";
import type { FixedThresholdSource, SdkBreakerSettings, SdkDeferralReason } from "../learning/sdkBreakerWatch.js";
import { sdkTimeoutOf } from "../learning/sdkBreakerWatch.js";
import type { RequestHedgingControls } from "../request/requestModel.js";
import type { CrossRegionTimingSettings } from "../planning/timing.js";
import { CrossRegionTiming, crossRegionTimings } from "../planning/timing.js";
import { policyLogger } from "../log.js";
import { agentPoolsSockets, boundsSockets, primaryMayDrain } from "../race/drainSockets.js";
import type { LayerRoute, RequestHandler } from "./requestHandler.js";
import { policyOver } from "./requestHandler.js";

/** The name of the {@link crossRegionHedgingPolicy}. */
export const crossRegionHedgingPolicyName = "crossRegionHedgingPolicy";

const logger = policyLogger(crossRegionHedgingPolicyName);

/** The defaults of data-plane hedging, as the other Cosmos DB SDKs define them. */
export const crossRegionHedgingDefaults = {
  /** Threshold when hedging is enabled explicitly (Java, Python). */
  threshold: 500,
  /** Step between later hedges when enabled explicitly (Java, Python). */
  thresholdStep: 100,
  /** Ceiling of the threshold when hedging follows the account's PPAF state (.NET). */
  ppafThresholdCeiling: 1000,
  /** Step when hedging follows the account's PPAF state (.NET). */
  ppafThresholdStep: 500,
  /** The `@azure/cosmos` default `connectionPolicy.requestTimeout`. */
  requestTimeout: 60000,
  /** Milliseconds a region that answered 429 without `x-ms-retry-after-ms` is kept out of hedges. */
  throttleWithoutRetryAfterMs: 1000,
  /** The longest `x-ms-retry-after-ms` honoured, in milliseconds; a larger value is treated as this. */
  maxRetryAfterMs: 60_000,
} as const;

/**
 * The threshold when hedging is on explicitly and none is given: the
 * default, brought below a short request timeout (to half of it), so that a
 * hedge can still go out.
 */
export function crossRegionDefaultThresholdMs(requestTimeout: number): number {
  return Math.min(crossRegionHedgingDefaults.threshold, requestTimeout / 2);
}

/** Options of the {@link crossRegionHedgingPolicy}. */
export interface CrossRegionHedgingPolicyOptions {
  /**
   * The account's regions, shared with the client's other hedging policies.
   * Default: a new {@link RegionCache} that learns the topology from the
   * database-account responses passing through this policy.
   */
  regions?: RegionCache;
  /**
   * `true` (the default when the policy is added by hand) hedges whatever
   * the account says; `"followAccount"` hedges only while the account reports
   * per-partition automatic failover (PPAF), as the .NET SDK does; `false`
   * turns hedging off while keeping the policy in place.
   */
  enabled?: boolean | "followAccount";
  /**
   * Milliseconds to wait for the primary before the first hedge; must be
   * below `requestTimeout`. Default 500 (or half of `requestTimeout` when
   * that is smaller) when enabled explicitly; `min(1000, requestTimeout / 2)` when following
   * the account's PPAF state. `"adaptive"` (or an {@link AdaptiveThresholdOptions}
   * object) learns it instead, per primary region, hedge region and latency
   * class: the earliest delay, between a floor of 5 ms and a ceiling of the
   * fixed default, whose hedges cost no more than the share of reads a hedge
   * could rescue plus one point and at least half of which would answer
   * first, judged from the primary's recent latencies and the hedge
   * region's; no hedge while that share is below 0.5 %, and when there is
   * no such delay, only a read that
   * outlasts every recent answer of its primary by the hedge region's
   * latency is hedged. While
   * the hedge region's latency is unknown, the 95th percentile
   * (`1 - maxExtraLoad`) of the recent healthy latency of the best region.
   */
  threshold?: number | "adaptive" | AdaptiveThresholdOptions;
  /**
   * Milliseconds between later hedges, each to the next applicable region.
   * Default 100 when enabled explicitly; 500 when following PPAF.
   */
  thresholdStep?: number;
  /**
   * The client's per-attempt request timeout in milliseconds, from which the
   * PPAF default threshold is derived. Default 60000, as in `@azure/cosmos`.
   */
  requestTimeout?: number;
  /**
   * Hedge writes too, on multi-write accounts only. Default `false`: a write
   * is never sent twice unless you opt in knowing that a hedged write can
   * reach two regions (with 409 or 412 on one of them). Only writes whose
   * second application cannot change the caller's answer go twice: create,
   * replace, delete, an upsert with `If-Match`, patches that read nothing,
   * and batch or bulk of those; an upsert without `If-Match` (201 once, 200
   * twice) is sent once. A hedgeable write pays up front for an abort signal
   * of the race's on its primary (see `drainLosers`): its losers are always
   * aborted.
   */
  enableMultiWriteRegionHedge?: boolean;
  /**
   * Re-signs each arm before it is sent, for example {@link masterKeySigner}.
   * Policies after this one in the pipeline see every arm too, so a
   * `bearerTokenAuthenticationPolicy` signs each arm without a signer here.
   */
  signer?: RequestSigner;
  /** Called with the diagnostics of every document request this policy considered. Errors it throws, and rejections of a promise it returns, are logged and ignored. */
  onDiagnostics?: (diagnostics: HedgeDiagnostics) => void;
  /**
   * Bounds the extra load of hedging, whatever the threshold: each request
   * deposits `maxExtraLoad` and each hedge withdraws 1, and a hedge goes
   * only when two windows both allow it. Over any 10 seconds hedges may
   * spend `maxExtraLoad` of those requests plus `minHedgesPerSecond` × 10,
   * room for a burst of slow requests; over any 60 seconds they spend at
   * most `maxExtraLoad` of those requests, or `minHedgesPerSecond` × 60 when
   * that is more. So a burst may exceed the share for a few seconds, but a
   * busy client whose every request is slow adds at most the share over a
   * minute, and a quiet client still hedges about `minHedgesPerSecond`. At
   * most `maxHedgesInFlight` hedges run at once. A request whose hedge the
   * budget refuses runs unhedged, with `skipReason: "budgetExhausted"`.
   * Default: on, with a share of 0.15 (or the adaptive threshold's
   * `maxExtraLoad` when larger), 1 hedge a second and 100 in flight.
   * `false` turns the budget off.
   */
  budget?: false | HedgeLoadBudgetOptions;
  /**
   * Send the hedges of a read without the request's `x-ms-session-token`;
   * the primary always keeps it. Default `false`. With the token, a region
   * that has not yet replicated the session's writes answers 404/1002 and
   * cannot help when the primary region is the slow one; without it, the
   * hedge answers from whatever that region has, which may be older than the
   * session's own writes (the session guarantee is traded for latency on the
   * reads a hedge wins). Diagnostics mark each arm sent without the token.
   */
  hedgesWithoutSessionToken?: boolean;
  /**
   * How reads order their hedges (see {@link RegionRouting}): `"preferred"`,
   * `"demotion"` or `"thompson"`. Default `"demotion"`, with a fixed
   * threshold too, so that a read's hedges go first to the regions that
   * have been answering; `"preferred"` is the .NET SDK's behaviour. The
   * primary always goes where the SDK sent it: a ranking orders only the
   * hedges. Writes keep the preferred order.
   */
  routing?: RegionRouting;
  /**
   * What happens to the reads still running when their race is decided.
   * `true` (the default) leaves each to finish in the background, within
   * the bounds of {@link LoserDrainOptions} (5 s, 1 MiB, 128 at once), so
   * that its connection and TLS session go back to the pool; nothing of it
   * reaches the caller, and its request charge is counted when it arrives.
   * `false` aborts them at once, which saves their bandwidth and costs a
   * new connection to their region. Losers of hedged writes are always
   * aborted: one still waiting for its connection would otherwise be sent
   * after its race was decided. So are losers whose connection agent bounds
   * its sockets (a finite `maxSockets` or `maxTotalSockets`): a drained one
   * would hold a socket the requests behind it wait for.
   *
   * Cost: with draining (over the hedging client's own transport), the
   * request the SDK built is the primary as it is, and a read that never
   * hedges costs a timer and a small state object; a losing primary drains
   * by nature, its connection released from keeping the process alive.
   * Where losers must be aborted (`false`, hedged writes, bounded agents,
   * or a transport of your own, on which a drained connection cannot be
   * managed) the primary needs an abort signal of the race's before it is
   * sent: every such request pays an `AbortController` and a listener on
   * the SDK's signal.
   */
  drainLosers?: boolean | LoserDrainOptions;
}

/** Every key of {@link CrossRegionHedgingPolicyOptions}, checked against the interface by the compiler. */
const crossRegionHedgingOptionKeys = optionKeys<CrossRegionHedgingPolicyOptions>({
  regions: true,
  enabled: true,
  threshold: true,
  thresholdStep: true,
  requestTimeout: true,
  enableMultiWriteRegionHedge: true,
  signer: true,
  onDiagnostics: true,
  budget: true,
  routing: true,
  hedgesWithoutSessionToken: true,
  drainLosers: true,
});

/** A {@link crossRegionHedgingPolicy}: a pipeline policy that also reports what it has done. */
export interface CrossRegionHedgingPolicy extends PipelinePolicy {
  /** A snapshot of the policy's counters, per-region latency percentiles, demotions and budget. */
  metrics(): HedgingMetrics;
}

const routings: readonly RegionRouting[] = ["preferred", "demotion", "thompson"];

/** Every setting of a {@link crossRegionHedgingPolicy}, validated and with its defaults filled in. */
interface CrossRegionSettings {
  readonly regions: RegionCache;
  readonly timing: CrossRegionTimingSettings;
  readonly adaptive: AdaptiveThresholdSettings | undefined;
  readonly budget: LoadBudget | undefined;
  readonly routing: RegionRouting;
  readonly drain: LoserDrain | undefined;
  /** The client's per-attempt request timeout (`requestTimeout`). */
  readonly requestTimeout: number;
  readonly signer: RequestSigner | undefined;
  readonly onDiagnostics: ((diagnostics: HedgeDiagnostics) => void) | undefined;
  readonly hedgesWithoutSessionToken: boolean;
}

/** Validates the options, each error naming the option and the value, and returns every setting. */
function validate(given: CrossRegionHedgingPolicyOptions): CrossRegionSettings {
  // Each option is read once, from a copy: a getter or proxy could otherwise answer differently after it was validated.
  const options = readOnce(optionsObject("crossRegionHedgingPolicy options", given, crossRegionHedgingOptionKeys), crossRegionHedgingOptionKeys);
  const { enabled = true } = options;
  if (enabled !== true && enabled !== false && enabled !== "followAccount") {
    throw new TypeError(`enabled must be true, false or "followAccount"; got ${describe(enabled)}.`);
  }
  const threshold = options.threshold;
  if (typeof threshold === "number") positiveMilliseconds("threshold", threshold);
  else if (threshold !== undefined && !isAdaptiveThreshold(threshold)) {
    // An object is the adaptive threshold's form: say which of its fields is wrong, not only that it is an object.
    const objectForm = typeof threshold === "object" && threshold !== null && !Array.isArray(threshold);
    throw new RangeError(
      objectForm
        ? `threshold.mode must be "adaptive" in an object threshold; got ${describe((threshold as { mode?: unknown }).mode)}.`
        : `threshold must be a finite number of milliseconds above 0, "adaptive" or { mode: "adaptive", ... }; got ${describe(threshold)}.`,
    );
  }
  if (options.thresholdStep !== undefined) positiveMilliseconds("thresholdStep", options.thresholdStep);
  const requestTimeout = positiveMilliseconds("requestTimeout", orDefault(options.requestTimeout, crossRegionHedgingDefaults.requestTimeout));
  optionalBoolean("enableMultiWriteRegionHedge", options.enableMultiWriteRegionHedge);
  optionalBoolean("hedgesWithoutSessionToken", options.hedgesWithoutSessionToken);
  optionalFunction("signer", options.signer);
  optionalFunction("onDiagnostics", options.onDiagnostics);
  if (typeof threshold === "number" && threshold >= requestTimeout) {
    // The SDK aborts the attempt at requestTimeout: a hedge due later could never go out.
    throw new RangeError(`threshold must be below requestTimeout (${requestTimeout} ms); got ${describe(threshold)}.`);
  }
  const explicit = {
    thresholdMs: crossRegionDefaultThresholdMs(requestTimeout),
    thresholdStepMs: options.thresholdStep ?? crossRegionHedgingDefaults.thresholdStep,
  };
  const ppaf = {
    thresholdMs: Math.min(crossRegionHedgingDefaults.ppafThresholdCeiling, requestTimeout / 2),
    thresholdStepMs: options.thresholdStep ?? crossRegionHedgingDefaults.ppafThresholdStep,
  };
  const fixedDefault = enabled === "followAccount" ? ppaf.thresholdMs : explicit.thresholdMs;
  const adaptive = threshold !== undefined && isAdaptiveThreshold(threshold) ? resolveAdaptiveThreshold(threshold, fixedDefault) : undefined;
  if (adaptive !== undefined && adaptive.floor >= requestTimeout) {
    // Every adaptive threshold is at least the floor: at or past requestTimeout no hedge could ever go out.
    throw new RangeError(`threshold.floor must be below requestTimeout (${requestTimeout} ms); got ${describe(adaptive.floor)}.`);
  }
  const budget =
    options.budget === false
      ? undefined
      : new LoadBudget(resolveLoadBudget(options.budget === undefined ? {} : options.budget, adaptive?.maxExtraLoad));
  const routing = options.routing ?? "demotion";
  if (!routings.includes(routing)) {
    throw new TypeError(`routing must be "preferred", "demotion" or "thompson"; got ${describe(routing)}.`);
  }
  const drain = resolveLoserDrain(options.drainLosers);
  const regions = regionCacheOption(options.regions);
  return {
    regions,
    timing: {
      enabled,
      ...crossRegionTimings(adaptive, typeof threshold === "number" ? threshold : undefined, explicit, ppaf),
      enableMultiWriteRegionHedge: options.enableMultiWriteRegionHedge === true,
    },
    adaptive,
    budget,
    routing,
    drain,
    requestTimeout,
    signer: options.signer,
    onDiagnostics: options.onDiagnostics,
    hedgesWithoutSessionToken: options.hedgesWithoutSessionToken === true,
  };
}

/** The primary of a race whose straggler evidence the budget can read: a learned read class and a known region. */
function racePrimary(tails: RegionHealth, region: string | undefined, operation: OperationKind): RacePrimary | undefined {
  const latencyClass = latencyClassOf(operation);
  return region === undefined || latencyClass === undefined ? undefined : { tails, region, latencyClass };
}

/** Where a document read's plain plan is kept in its region's list (see `plainPlanOf`). */
function readKindIndex(kind: OperationKind): number {
  switch (kind) {
    case "pointRead":
      return 0;
    case "query":
      return 1;
    case "queryPlan":
      return 2;
    case "readFeed":
      return 3;
    default:
      return 4;
  }
}

/**
 * A plain read's plan, shared by every plain read of its kind and region
 * (see `plainPlanOf`): its reads wait as pending reads (with the headers of
 * those won alone), go unhedged (with the headers of their records), or go
 * the full way (a race with hedges planned up front).
 */
type PlainPlan =
  | { readonly kind: "lone"; readonly plan: RacePlan; readonly lone: LoneHeaders }
  | { readonly kind: "skipped"; readonly plan: SkipPlan; readonly skipped: SkippedHeaders }
  | { readonly kind: "full"; readonly plan: RacePlan };

/** A document read sent lazily, with what this policy needs to know of it to finish it or to race it. */
class DocumentRead extends PendingRead {
  /** The request charge of the primary's answer, once it came. */
  charge: number | undefined;

  constructor(
    request: PipelineRequest,
    region: RegionEndpoint,
    readonly plan: RacePlan,
    readonly lone: LoneHeaders,
    readonly operation: OperationKind,
    readonly detection: OperationDetection | undefined,
    readonly route: LayerRoute,
    host: PendingReadHost,
    startedAt: number,
    /** The SDK's request context of the attempt, kept for its bookkeeping once a race is built. */
    readonly sdkContext: object | undefined,
  ) {
    super(request, region, plan.header.thresholdMs ?? 0, host, startedAt);
  }
}

/**
 * Hedges Cosmos DB document reads across regions: when the region the SDK
 * chose has not answered within the threshold, the same request goes to the
 * next applicable region, then the next after each step, and a hedge's
 * success wins; the other arms are aborted. A hedge's transient result or
 * transport error launches the next hedge at once. The primary's answer,
 * whatever it is, is returned as soon as it comes unless a hedge succeeded
 * first, so the SDK's retry policy reasons about the region it addressed. Writes are hedged only on multi-write accounts with
 * `enableMultiWriteRegionHedge`.
 *
 * Every arm's latency feeds per-region windows, from which an adaptive
 * threshold can be learned (`threshold: "adaptive"`); a budget bounds the
 * extra load; regions answering 429 are not hedged into until their
 * retry-after has passed; and reads can be routed away from a region that
 * keeps losing to its hedges (`routing`). `metrics()` reports all of it.
 *
 * On a core-client pipeline, add it after the Retry phase
 * (`pipeline.addPolicy(policy, { afterPhase: "Retry" })`): each arm then goes
 * out once, the retry policy retries the whole race, and the Sign phase signs
 * every arm.
 */
export function crossRegionHedgingPolicy(options: CrossRegionHedgingPolicyOptions = {}): CrossRegionHedgingPolicy {
  const hedging = crossRegionHedging(options);
  return { ...policyOver(crossRegionHedgingPolicyName, hedging.regions, hedging), metrics: hedging.metrics };
}

/** How a warning names each place a fixed threshold comes from. */
const thresholdNames: Readonly<Record<FixedThresholdSource, string>> = {
  options: "crossRegion.threshold",
  ppafDefault: "The default threshold while the account reports per-partition automatic failover",
  request: "A request's hedging threshold",
};

function unreachableThresholdLine(thresholdMs: number, source: FixedThresholdSource, readTimeoutMs: number): string {
  return (
    `${thresholdNames[source]} is ${thresholdMs} ms, but @azure/cosmos now cuts each read of a document at ${readTimeoutMs} ms ` +
    "(its partition-level failover is on, as connectionPolicy.enablePartitionLevelFailover is unless set to false, and the account " +
    "reports per-partition automatic failover; or connectionPolicy.enablePartitionLevelCircuitBreaker is on): such reads are never " +
    `hedged. Set a threshold below ${readTimeoutMs} ms.`
  );
}

/**
 * The hedging of a {@link crossRegionHedgingPolicy}, for a layer that reads each request's controls and classifies it itself.
 * @param sdkBreaker - the `@azure/cosmos` client's partition-level circuit breaker, which `withHedging` knows of (see `SdkBreakerWatch`).
 */
export function crossRegionHedging(
  options: CrossRegionHedgingPolicyOptions,
  sdkBreaker?: SdkBreakerSettings,
): RequestHandler & Pick<CrossRegionHedgingPolicy, "metrics"> & { readonly regions: RegionCache } {
  const settings = validate(options);
  const { regions, budget, drain, signer } = settings;
  const onDeferral = (region: string, reason: SdkDeferralReason): void =>
    logger.info(
      reason === "sdkCircuitBreaker"
        ? `${region}: a hedge hid a failure of this region from @azure/cosmos's partition-level circuit breaker; requests addressed to it go unhedged (skipReason "sdkCircuitBreaker") until a minute after its last failure, so that the breaker counts them as it would without hedging.`
        : `${region}: a hedge hid an answer of this region that @azure/cosmos's endpoint discovery acts on (a 403/1008 or 403/3, a request it could not send); requests addressed to it go unhedged (skipReason "sdkEndpointDiscovery") for a minute, so that the SDK marks the region unavailable as it would without hedging.`,
    );
  const health = new RegionHealth(regions, {
    routing: settings.routing,
    adaptive: settings.adaptive,
    throttling: crossRegionHedgingDefaults,
    sdkBreaker:
      sdkBreaker === undefined
        ? undefined
        : { ...sdkBreaker, onDeferral, onUnreachableThreshold: (thresholdMs, source) => logger.warning(unreachableThresholdLine(thresholdMs, source, sdkBreaker.readTimeoutMs)) },
  });
  const planner = new HedgePlanner(regions, new CrossRegionTiming(settings.timing), health);
  /**
   * How long @azure/cosmos lets one attempt of `operation` run before it cuts it: its `requestTimeout`, shorter while
   * its partition-level breaker (or failover) is on for a read or query of documents it resolved a partition key range
   * for: a point read, a change feed's page, a query scoped to a partition key. (A query's plan, for one, runs to
   * `requestTimeout`, and its late answer is what the SDK's endpoint discovery acts on: never bound a drain below what
   * plain would have waited.)
   */
  const sdkAttemptTimeoutMs = (operation: OperationKind, request: PipelineRequest): number => {
    if (sdkBreaker === undefined || !documentReadKinds.has(operation) || !sdkBreaker.active()) return settings.requestTimeout;
    const facts = sdkBreaker.bookkeeping?.attemptOf(request);
    // Without the SDK's context, only the reads it always resolves a partition for are taken for cut short.
    if (facts === undefined && operation !== "pointRead" && operation !== "changeFeed") return settings.requestTimeout;
    return Math.min(settings.requestTimeout, sdkTimeoutOf(facts, sdkBreaker));
  };
  const sink: DiagnosticsSink = { logger, onDiagnostics: settings.onDiagnostics, learner: health };
  /** The strategy of the latest timing (a batch's judges its answer apart): nearly every request has the same one, and a strategy keeps no state of a race. */
  let strategy: DocumentRaceStrategy | undefined;
  const strategyFor = (thresholdMs: number, thresholdStepMs: number): DocumentRaceStrategy => {
    if (strategy === undefined || strategy.thresholdMs !== thresholdMs || strategy.thresholdStepMs !== thresholdStepMs) {
      strategy = new DocumentRaceStrategy(thresholdMs, thresholdStepMs, budget);
    }
    return strategy;
  };
  /**
   * A race's strategy: the shared one while the budget covers its reserve (nearly always); one of the race's own,
   * which knows its primary's healthy tail, when the budget asks for straggler evidence, and for a write or a batch.
   */
  const strategyOf = (
    header: { readonly thresholdMs?: number | undefined; readonly primaryRegion?: string | undefined },
    thresholdStepMs: number,
    operation: OperationKind,
  ): DocumentRaceStrategy => {
    const thresholdMs = header.thresholdMs ?? 0;
    const kind = operation === "batch" ? "batch" : documentWriteKinds.has(operation) ? "write" : "read";
    if (kind === "read" && (budget === undefined || budget.evidenceNeeded() === 0)) return strategyFor(thresholdMs, thresholdStepMs);
    return new DocumentRaceStrategy(thresholdMs, thresholdStepMs, budget, budget && racePrimary(health, header.primaryRegion, operation), performance.now(), kind);
  };

  function sendDocumentRequest(
    request: PipelineRequest,
    next: SendRequest,
    operation: OperationKind,
    controls: RequestHedgingControls,
  ): Promise<PipelineResponse> {
    budget?.deposit();
    // A later page of a feed is a read like any other: its continuation token (or change feed etag) is valid in
    // every region of the account, which is why the SDK itself retries a page in the next region with the same token.
    const addressed = regions.regionOf(request.url);
    return sendPlanned(request, next, operation, controls, planner.plan(request, operation, addressed, controls));
  }

  /** A pending read's host: what a read sent lazily asks of this policy (see {@link PendingRead}). */
  const host: PendingReadHost = {
    timers: new ThresholdTimers(),
    noteSettled(pending, response) {
      const read = pending as DocumentRead;
      if (read.detection !== undefined) read.charge = noteSdkRequestEnded(read.detection, read.region.name, response);
      else if (response !== undefined) read.charge = requestChargeOf(response);
      if (response !== undefined) health.noteResponse(read.region.name, response);
    },
    endsAlone(read) {
      // Before any hedge, a race hands back whatever the primary answered (a transient answer is the SDK's to retry), so
      // only a caller that aborted needs the race: its answer is the AbortError.
      return read.request.abortSignal?.aborted !== true;
    },
    concludeAlone(pending, response) {
      const read = pending as DocumentRead;
      const { header } = read.plan;
      const endedAt = read.endedAt ?? performance.now();
      const { status } = response;
      // What the strategy's verdict on the primary would be: anything but a final answer is the race's fallback.
      const fallback = status >= 400 && !isFinalStatus(status, subStatusOf(response));
      // Whole milliseconds, as the race's record and learning take them.
      const durationMs = Math.round(endedAt - read.startedAt);
      health.learnAlone(read.region.name, read.operation, durationMs, status, header.thresholdMs, endedAt);
      publishDeferred(sink, response, new LonePrimaryRecord(read.lone, durationMs, status, response.headers, read.charge, fallback), read.detection);
      return response;
    },
    promote(pending, thresholdPassed) {
      const read = pending as DocumentRead;
      const { request, plan, operation } = read;
      if (read.sdkContext !== undefined) keepAttemptContext(request, read.sdkContext);
      const next = read.route.prepare(request, operation, read.detection, true);
      // The plan is the template of every plain read of its kind and region; the race completes a copy of its header.
      const header = copyHeader(plan.header);
      return adoptHedged(request, next, header, {
        primaryRegion: read.region,
        planner,
        operation,
        controls: plainSdkControls,
        // Chosen as the full way chooses it when it sends: a read goes lazily only with the budget's reserve covered.
        strategy: strategyFor(header.thresholdMs ?? 0, plan.thresholdStepMs ?? 0),
        signer,
        drain,
        callerTimeoutMs: sdkAttemptTimeoutMs(operation, request),
        hedgesWithoutSessionToken: settings.hedgesWithoutSessionToken,
      }, sink, read.startedAt, thresholdPassed);
    },
  };

  /**
   * A plain read of a `withHedging` client, sent lazily (see
   * {@link RequestHandler.sendLazily}): a read whose race would be a fixed
   * threshold's with nothing to plan up front, whose losers may drain (its
   * primary needs no signal of the race's), and whose first hedge the budget
   * would admit on time goes out as a {@link PendingRead}. Any other is sent
   * the full way. Writes are not taken: a hedgeable one needs its primary's
   * signal up front, and the rest are recorded as skipped the full way.
   */
  const sendLazily: NonNullable<RequestHandler["sendLazily"]> = (request, operation, addressed, detection, route, sdkContext) => {
    // An adaptive threshold is learned per request, with its hedges planned up front; a caller that aborted already
    // gets its AbortError, with nothing sent, the full way.
    if (
      settings.adaptive !== undefined ||
      !documentReadKinds.has(operation) ||
      drain === undefined ||
      !agentPoolsSockets(request) ||
      !isResendableBody(request) ||
      request.abortSignal?.aborted === true
    ) {
      return undefined;
    }
    const now = performance.now();
    const reserveCovered = budget === undefined || budget.depositCoveringReserve(now);
    // Rare (see SdkBreakerWatch): planned afresh, the full way, where the plan says why the read goes unhedged.
    if (health.deferringToSdkBreaker(addressed.name)) {
      // A race may hide what the SDK's bookkeeping must hear of: the attempt's context is kept for it, as the full way keeps it.
      if (sdkContext !== undefined) keepAttemptContext(request, sdkContext);
      return sendPlanned(request, route.prepare(request, operation, detection, false), operation, plainSdkControls, planner.plan(request, operation, addressed, plainSdkControls));
    }
    const plain = plainPlanOf(request, operation, addressed);
    if (plain.kind === "skipped") return sendSkipped(request, route.send, plain.plan, sink, { headers: plain.skipped, operation: detection });
    // A budget short of its reserve times the first hedge by the read's healthy tail, which a race's strategy knows.
    if (plain.kind === "full" || !reserveCovered) {
      if (sdkContext !== undefined) keepAttemptContext(request, sdkContext);
      return sendPlanned(request, route.prepare(request, operation, detection, false), operation, plainSdkControls, { ...plain.plan, header: copyHeader(plain.plan.header) });
    }
    if (detection !== undefined) noteSdkRequestSent(detection, addressed.name);
    return new DocumentRead(request, addressed, plain.plan, plain.lone, operation, detection, route, host, now, sdkContext).start(route.send);
  };

  /** The topology the plans of {@link plainPlans} were made under. */
  let plainPlansTopology: AccountTopology | undefined;
  /**
   * The plans of plain reads (see {@link LayerRoute}), by the region addressed
   * and the kind of read: with a fixed threshold, nothing else of a plain
   * read's changes its plan until the topology does. Each is a template:
   * whoever completes its header into a record works on a copy.
   */
  const plainPlans = new Map<RegionEndpoint, Array<PlainPlan | undefined>>();
  const plainPlanOf = (request: PipelineRequest, operation: OperationKind, addressed: RegionEndpoint): PlainPlan => {
    const { topology } = regions;
    if (topology !== plainPlansTopology) {
      plainPlans.clear();
      plainPlansTopology = topology;
    }
    let byKind = plainPlans.get(addressed);
    if (byKind === undefined) plainPlans.set(addressed, (byKind = []));
    const index = readKindIndex(operation);
    let plain = byKind[index];
    if (plain === undefined) {
      const plan = planner.plan(request, operation, addressed, plainSdkControls);
      byKind[index] = plain =
        plan.kind === "skip"
          ? { kind: "skipped", plan, skipped: new SkippedHeaders(Object.freeze(skippedRecord(copyHeader(plan.header), plan.reason, 0))) }
          : // Only a race of a fixed threshold with nothing planned up front can wait as a pending read.
            plan.hedges === undefined
            ? { kind: "lone", plan, lone: new LoneHeaders(Object.freeze(copyHeader(plan.header))) }
            : { kind: "full", plan };
    }
    return plain;
  };

  /** Sends a planned request: unhedged with its record when the plan skips it, otherwise as a race. */
  function sendPlanned(request: PipelineRequest, next: SendRequest, operation: OperationKind, controls: RequestHedgingControls, plan: SkipPlan | RacePlan): Promise<PipelineResponse> {
    if (plan.kind === "skip") return sendSkipped(request, next, plan, sink);
    const isWrite = documentWriteKinds.has(operation);
    // A drained loser holds its socket: where the agent bounds them, the requests waiting for one would pay for it.
    const drains = !isWrite && drain !== undefined && !boundsSockets(request);
    const { header } = plan;
    return sendHedged(request, next, header, {
      primaryRegion: plan.primary,
      hedges: plan.hedges,
      planner,
      operation,
      controls,
      strategy: strategyOf(header, plan.thresholdStepMs ?? 0, operation),
      signer,
      // A write loser still waiting for its connection would go out after its race was decided if left to drain.
      drain: drains ? drain : undefined,
      callerTimeoutMs: sdkAttemptTimeoutMs(operation, request),
      // Losers that may not drain are aborted, the primary included, which needs a signal of the race's on it from the start;
      // so does a primary whose drained connection the race could not manage.
      eager: !drains || !primaryMayDrain(request),
      // A write keeps its session token: it is the read-your-writes guarantee of the write itself.
      hedgesWithoutSessionToken: settings.hedgesWithoutSessionToken && !isWrite,
    }, sink);
  }

  return {
    regions,
    kinds: documentKinds,
    send: sendDocumentRequest,
    sendLazily,
    metrics: () => health.snapshot(budget, drain),
  };
}
