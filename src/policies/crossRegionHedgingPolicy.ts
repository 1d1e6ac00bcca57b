import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { LatencyClass } from "../caches/latencyWindows.js";
import { FeedPins } from "../caches/feedPins.js";
import { LatencyWindows, latencyClassOf } from "../caches/latencyWindows.js";
import type { AccountTopology, RegionEndpoint } from "../caches/regionCache.js";
import type { RegionCache } from "../caches/regionCache.js";
import { regionCacheOption } from "../caches/regionCache.js";
import { describe, normalizeRegionName, sameRegion } from "../caches/regionNames.js";
import type { RankedTargets, RegionRouting } from "../caches/regionRanking.js";
import { DemotionTracker, ThompsonRanking } from "../caches/regionRanking.js";
import { CosmosHeaders } from "../cosmos/headers.js";
import { continuesFeed, documentFeedKinds } from "../cosmos/feedPages.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { classifyOperation, documentReadKinds, documentWriteKinds } from "../cosmos/operationKind.js";
import { isFinalResult, isSuccessResult } from "../cosmos/statusTables.js";
import type { AdaptiveThresholdOptions, AdaptiveThresholdSettings } from "../hedging/adaptiveThreshold.js";
import { adaptiveThreshold, adaptiveThresholdDefaults, isAdaptiveThreshold, resolveAdaptiveThreshold } from "../hedging/adaptiveThreshold.js";
import { isResendableBody, retarget } from "../hedging/cloneRequest.js";
import { HedgeDecisions } from "../hedging/hedgeDecision.js";
import type { HedgeArmDiagnostics, HedgeDiagnostics, HedgeSkipReason } from "../hedging/diagnostics.js";
import type { DiagnosticsHeader, DiagnosticsSink } from "../hedging/hedgedSend.js";
import { diagnosticsHeader, sendHedged, sendLaterPage, sendSkipped } from "../hedging/hedgedSend.js";
import type { HedgeLoadBudgetOptions } from "../hedging/loadBudget.js";
import { LoadBudget, resolveLoadBudget } from "../hedging/loadBudget.js";
import type { LoserDrainOptions } from "../hedging/loserDrain.js";
import { resolveLoserDrain } from "../hedging/loserDrain.js";
import type { HedgingMetrics } from "../hedging/metrics.js";
import { HedgingMetricsRecorder } from "../hedging/metrics.js";
import type { RaceStrategy } from "../hedging/race.js";
import type { RequestHedgingControls } from "../hedging/requestControls.js";
import { requestControlsOf } from "../hedging/requestControls.js";
import { raceTargets } from "../hedging/targets.js";
import { optionalBoolean, optionalFunction, optionsObject, positiveMilliseconds } from "../hedging/validation.js";
import { policyLogger } from "../log.js";
import { sendObservingAccount } from "./accountObservation.js";

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
   * fixed default, at which a hedge would answer first for at least 9 in 10
   * of the reads still running then, judged from the primary's recent
   * latencies and the hedge region's; when there is none, only a read that
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
   * reach two regions (with 409 or 412 on one of them).
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
   * How reads choose their primary and hedge order (see {@link RegionRouting}):
   * `"preferred"`, `"demotion"` or `"thompson"`. Default `"demotion"`, with
   * a fixed threshold too, so that reads leave a browned-out region once
   * the budget runs dry; `"preferred"` is the .NET SDK's behaviour. Writes
   * always keep their region and the preferred order.
   */
  routing?: RegionRouting;
  /**
   * What happens to the reads still running when their race is decided.
   * `true` (the default) leaves each to finish in the background, within
   * the bounds of {@link LoserDrainOptions} (5 s, 1 MiB, 64 at once), so
   * that its connection and TLS session go back to the pool; nothing of it
   * reaches the caller, and its request charge is counted when it arrives.
   * `false` aborts them at once, which saves their bandwidth and costs a
   * new connection to their region. Losers of hedged writes are always
   * aborted: one still waiting for its connection would otherwise be sent
   * after its race was decided.
   */
  drainLosers?: boolean | LoserDrainOptions;
}

/** A {@link crossRegionHedgingPolicy}: a pipeline policy that also reports what it has done. */
export interface CrossRegionHedgingPolicy extends PipelinePolicy {
  /** A snapshot of the policy's counters, per-region latency percentiles, demotions and budget. */
  metrics(): HedgingMetrics;
}

/** How long to wait before hedging, fixed or learned per request. */
type Timing =
  | {
      readonly kind: "fixed";
      readonly thresholdMs: number;
      readonly thresholdStepMs: number;
      readonly thresholdSource: "options" | "ppafDefault" | "request";
    }
  | { readonly kind: "adaptive"; readonly thresholdStepMs: number; readonly settings: AdaptiveThresholdSettings };

const routings: readonly RegionRouting[] = ["preferred", "demotion", "thompson"];
const timeoutErrorCodes: ReadonlySet<string> = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT", "ECONNABORTED"]);

interface ValidatedOptions {
  readonly enabled: boolean | "followAccount";
  readonly requestTimeout: number;
  readonly adaptive: AdaptiveThresholdSettings | undefined;
  readonly budget: LoadBudget | undefined;
  readonly routing: RegionRouting;
}

function validate(options: CrossRegionHedgingPolicyOptions): ValidatedOptions {
  optionsObject("crossRegionHedgingPolicy options", options, [
    "regions",
    "enabled",
    "threshold",
    "thresholdStep",
    "requestTimeout",
    "enableMultiWriteRegionHedge",
    "signer",
    "onDiagnostics",
    "budget",
    "routing",
    "hedgesWithoutSessionToken",
    "drainLosers",
  ]);
  const { enabled = true } = options;
  if (enabled !== true && enabled !== false && enabled !== "followAccount") {
    throw new TypeError(`enabled must be true, false or "followAccount"; got ${describe(enabled)}.`);
  }
  const threshold = options.threshold;
  if (typeof threshold === "number") positiveMilliseconds("threshold", threshold);
  else if (threshold !== undefined && !isAdaptiveThreshold(threshold)) {
    throw new RangeError(
      `threshold must be a finite number of milliseconds above 0, "adaptive" or { mode: "adaptive", ... }; got ${describe(threshold)}.`,
    );
  }
  if (options.thresholdStep !== undefined) positiveMilliseconds("thresholdStep", options.thresholdStep);
  const requestTimeout = positiveMilliseconds("requestTimeout", options.requestTimeout ?? crossRegionHedgingDefaults.requestTimeout);
  optionalBoolean("enableMultiWriteRegionHedge", options.enableMultiWriteRegionHedge);
  optionalBoolean("hedgesWithoutSessionToken", options.hedgesWithoutSessionToken);
  optionalFunction("signer", options.signer);
  optionalFunction("onDiagnostics", options.onDiagnostics);
  if (typeof threshold === "number" && threshold >= requestTimeout) {
    // The SDK aborts the attempt at requestTimeout: a hedge due later could never go out.
    throw new RangeError(`threshold must be below requestTimeout (${requestTimeout} ms); got ${describe(threshold)}.`);
  }
  const fixedDefault =
    enabled === "followAccount"
      ? Math.min(crossRegionHedgingDefaults.ppafThresholdCeiling, requestTimeout / 2)
      : explicitDefaultThreshold(requestTimeout);
  const adaptive = threshold !== undefined && isAdaptiveThreshold(threshold) ? resolveAdaptiveThreshold(threshold, fixedDefault) : undefined;
  const budget =
    options.budget === false
      ? undefined
      : new LoadBudget(resolveLoadBudget(options.budget === undefined ? {} : options.budget, adaptive?.maxExtraLoad));
  const routing = options.routing ?? "demotion";
  if (!routings.includes(routing)) {
    throw new TypeError(`routing must be "preferred", "demotion" or "thompson"; got ${describe(routing)}.`);
  }
  return { enabled, requestTimeout, adaptive, budget, routing };
}

/** The explicit default threshold, brought below a short request timeout (to half of it) so that a hedge can still go out. */
function explicitDefaultThreshold(requestTimeout: number): number {
  return Math.min(crossRegionHedgingDefaults.threshold, requestTimeout / 2);
}

/**
 * A successful answer (2xx, 304): the only kind that may teach the ranking.
 * A region that answers fast with errors (a lagging replica's 404, a 401)
 * must never look better for it.
 */
function succeeded(arm: HedgeArmDiagnostics): boolean {
  return arm.status !== undefined && arm.status < 400;
}

function timedOut(arm: HedgeArmDiagnostics): boolean {
  if (arm.status === 408) return true;
  const error = arm.error;
  return error !== undefined && (error.name === "TimeoutError" || (error.code !== undefined && timeoutErrorCodes.has(error.code)));
}


/**
 * Hedges Cosmos DB document reads across regions: when the region the SDK
 * chose has not answered within the threshold, the same request goes to the
 * next applicable region, then the next after each step, and the first final
 * result wins; the other arms are aborted. A transient result or a transport
 * error launches the next hedge at once. When no arm produces a final result,
 * the primary's outcome is returned, so the SDK's retry policy reasons about
 * the region it addressed. Writes are hedged only on multi-write accounts with
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
  const { enabled, requestTimeout, adaptive, budget, routing } = validate(options);
  const drain = resolveLoserDrain(options.drainLosers);
  const regions = regionCacheOption(options.regions);
  const windows = new LatencyWindows();
  const decisions = adaptive !== undefined ? new HedgeDecisions(windows) : undefined;
  const recorder = new HedgingMetricsRecorder();
  const demotions = routing === "demotion" ? new DemotionTracker(regions) : undefined;
  const thompson = routing === "thompson" ? new ThompsonRanking() : undefined;
  /** Until when (on the `performance.now()` clock) each region, by normalized name, answers 429. */
  const throttledUntil = new Map<string, number>();
  const fixedThreshold = typeof options.threshold === "number" ? options.threshold : undefined;
  const pins = new FeedPins();
  const feed = { pins, regions };

  /** The timing of hedging turned on explicitly, where the client's own mode leaves it off. */
  const explicitTiming: Timing =
    adaptive !== undefined
      ? { kind: "adaptive", thresholdStepMs: options.thresholdStep ?? crossRegionHedgingDefaults.thresholdStep, settings: adaptive }
      : {
          kind: "fixed",
          thresholdMs: fixedThreshold ?? explicitDefaultThreshold(requestTimeout),
          thresholdStepMs: options.thresholdStep ?? crossRegionHedgingDefaults.thresholdStep,
          thresholdSource: "options",
        };

  /** The timing of the policy's mode: explicit, following the account's PPAF state, or off. */
  const modeTiming = (topology: AccountTopology | undefined): Timing | HedgeSkipReason => {
    if (enabled === false) return "disabled";
    const ppaf = enabled === "followAccount";
    if (ppaf && !topology?.perPartitionFailover) return "disabled";
    const thresholdStepMs =
      options.thresholdStep ?? (ppaf ? crossRegionHedgingDefaults.ppafThresholdStep : crossRegionHedgingDefaults.thresholdStep);
    if (adaptive !== undefined) return { kind: "adaptive", thresholdStepMs, settings: adaptive };
    if (fixedThreshold !== undefined) return { kind: "fixed", thresholdMs: fixedThreshold, thresholdStepMs, thresholdSource: "options" };
    return ppaf
      ? {
          kind: "fixed",
          thresholdMs: Math.min(crossRegionHedgingDefaults.ppafThresholdCeiling, requestTimeout / 2),
          thresholdStepMs,
          thresholdSource: "ppafDefault",
        }
      : { kind: "fixed", thresholdMs: explicitDefaultThreshold(requestTimeout), thresholdStepMs, thresholdSource: "options" };
  };

  const timingFor = (topology: AccountTopology | undefined, override: RequestHedgingControls["hedging"]): Timing | HedgeSkipReason => {
    if (override === false) return "disabled";
    if (topology?.crossRegionalHedgingDisabled) return "accountSwitch";
    const timing = modeTiming(topology);
    if (override === undefined) return timing;
    // A request's own settings override the client's, as in .NET: on a client that does not hedge they turn
    // hedging on for that request, with the explicit defaults for what they leave out.
    const base = typeof timing === "string" ? explicitTiming : timing;
    const thresholdStepMs = override.thresholdStep ?? base.thresholdStepMs;
    if (override.threshold === undefined) return { ...base, thresholdStepMs };
    return { kind: "fixed", thresholdMs: override.threshold, thresholdStepMs, thresholdSource: "request" };
  };

  const writeHedgingAllowed = (topology: AccountTopology | undefined): boolean =>
    options.enableMultiWriteRegionHedge === true && topology?.multipleWriteLocations === true;

  const throttledForMs = (region: string): number => {
    const key = normalizeRegionName(region);
    const until = throttledUntil.get(key);
    if (until === undefined) return 0;
    const left = until - performance.now();
    if (left > 0) return left;
    throttledUntil.delete(key);
    return 0;
  };

  const noteThrottling = (request: PipelineRequest, response: PipelineResponse): void => {
    if (response.status !== 429) return;
    const region = regions.regionOf(request.url);
    if (region === undefined) return;
    const header = Number.parseFloat(response.headers.get(CosmosHeaders.retryAfterMs) ?? "");
    const waitMs = Number.isFinite(header) && header >= 0 ? Math.min(header, crossRegionHedgingDefaults.maxRetryAfterMs) : crossRegionHedgingDefaults.throttleWithoutRetryAfterMs;
    throttledUntil.set(normalizeRegionName(region.name), performance.now() + waitMs);
  };

  /** The healthy latency a demoted region must match to be restored: the best baseline, or the threshold without one. */
  const restoreWithinMs = (latencyClass: LatencyClass | undefined, thresholdMs: number | undefined): number => {
    const settings = adaptive ?? { quantile: 1 - adaptiveThresholdDefaults.maxExtraLoad, floor: adaptiveThresholdDefaults.floor, minSamples: adaptiveThresholdDefaults.minSamples };
    let best: number | undefined;
    if (latencyClass !== undefined) {
      for (const region of regions.applicableRegions("read")) {
        const baseline = windows.baseline(region.name, latencyClass, settings.quantile, settings.minSamples);
        if (baseline !== undefined && (best === undefined || baseline < best)) best = baseline;
      }
    }
    if (best !== undefined) return Math.max(settings.floor, best);
    return thresholdMs ?? 0;
  };

  /** Learns from a finished request: metrics, latency windows, Thompson posteriors and demotion streaks. */
  const learn = (diagnostics: HedgeDiagnostics): void => {
    recorder.record(diagnostics);
    const latencyClass = latencyClassOf(diagnostics.operation);
    const { thresholdMs } = diagnostics;
    const primaryArm = diagnostics.arms[0];
    if (latencyClass === undefined || primaryArm === undefined) return;
    const winner = diagnostics.arms.find((arm) => arm.outcome === "returned" && succeeded(arm));
    const callerAborted = diagnostics.terminalState === "aborted";
    // A refused hedge leaves the arms still running unraced: their answers are no healthy baseline,
    // and letting them in would raise the threshold of the very region that needs hedging.
    const answerKind: "baseline" | "tail" = diagnostics.skipReason === "budgetExhausted" ? "tail" : "baseline";
    for (const arm of diagnostics.arms) {
      const duration = arm.durationMs;
      if (duration === undefined) continue;
      if (succeeded(arm)) {
        windows.record(arm.region, latencyClass, duration, answerKind);
        decisions?.observe(arm.region, latencyClass, duration, false);
        thompson?.observe(arm.region, latencyClass, duration);
      } else if (timedOut(arm)) {
        windows.record(arm.region, latencyClass, duration, "censored");
        decisions?.observe(arm.region, latencyClass, duration, true);
        thompson?.observeCensored(arm.region, latencyClass, duration);
      } else if (arm.outcome === "aborted" || arm.outcome === "drained") {
        // A loser cut short before the winner's own time says little of its region; one that ran longer is known slower.
        const informative = callerAborted
          ? thresholdMs !== undefined && duration >= thresholdMs
          : winner?.durationMs !== undefined && duration >= winner.durationMs;
        if (informative) windows.record(arm.region, latencyClass, duration, "censored");
        // Any bound may raise a hedge region's latency (a hedge that lost after 120 ms takes longer); a drained arm tells more when its drain ends.
        if (arm.outcome === "aborted") decisions?.observe(arm.region, latencyClass, duration, true);
        if (informative || !callerAborted) thompson?.observeCensored(arm.region, latencyClass, duration);
      } else if (arm.status !== undefined || arm.error !== undefined) {
        // An error answer, however fast, is no latency: it only keeps the region from being ranked first.
        thompson?.observeFailure(arm.region, latencyClass);
      }
    }
    if (demotions === undefined) return;
    if (diagnostics.terminalState === "hedgeWon" && winner !== undefined) {
      demotions.observe({ primary: primaryArm.region, hedgeWinner: winner.region });
    } else if (
      diagnostics.terminalState === "primaryWon" &&
      succeeded(primaryArm) &&
      primaryArm.durationMs !== undefined &&
      // A primary that won only because the budget kept its hedge home proves nothing about its speed.
      diagnostics.skipReason !== "budgetExhausted"
    ) {
      demotions.observe({ primary: primaryArm.region, primaryWonInMs: primaryArm.durationMs }, () =>
        restoreWithinMs(latencyClass, thresholdMs),
      );
    }
  };

  /**
   * A drained loser's whole latency, once its drain ends: a hedge that lost
   * to the primary is otherwise known only as a bound, and its region's
   * hedge latency is what the benefit rule needs. A drain cut at its limits
   * still leaves a bound, longer than the one taken at the decision.
   */
  const learnDrained = (diagnostics: HedgeDiagnostics, arm: HedgeArmDiagnostics): void => {
    const latencyClass = latencyClassOf(diagnostics.operation);
    if (decisions === undefined || latencyClass === undefined || arm.durationMs === undefined) return;
    if (succeeded(arm)) decisions.observe(arm.region, latencyClass, arm.durationMs, false);
    else if (arm.drainEnd !== "settled") decisions.observe(arm.region, latencyClass, arm.durationMs, true);
  };

  // One sink for every request: what learning needs (latency class, threshold) is in the diagnostics record itself.
  const sink: DiagnosticsSink = {
    logger,
    onDiagnostics: (diagnostics) => {
      learn(diagnostics);
      return options.onDiagnostics?.(diagnostics);
    },
    onDrainEnd: (diagnostics, arm) => {
      recorder.recordDrainEnd(arm);
      learnDrained(diagnostics, arm);
    },
  };

  const rank = (
    addressed: RegionEndpoint,
    candidates: readonly RegionEndpoint[],
    latencyClass: LatencyClass | undefined,
    controls: RequestHedgingControls,
  ): RankedTargets => {
    if (demotions !== undefined) return demotions.route(addressed, candidates);
    if (thompson === undefined || latencyClass === undefined) return { targets: candidates };
    const usualFirst = regions.applicableRegions("read", controls.excludedRegions)[0];
    // A read the SDK sent anywhere but its usual first region is its own failover or retry: only the hedges are reordered.
    if (!sameRegion(addressed, usualFirst)) {
      return { targets: [addressed, ...thompson.order(candidates.slice(1), latencyClass)], reason: "thompson" };
    }
    return { targets: thompson.order(candidates, latencyClass), reason: "thompson" };
  };

  async function sendDocumentRequest(request: PipelineRequest, next: SendRequest, operation: OperationKind): Promise<PipelineResponse> {
    budget?.deposit();
    // A later page goes unhedged to the region that issued its token: a hedge or the ranking would send the token elsewhere.
    if (continuesFeed(request, operation)) return sendLaterPage("crossRegion", operation, feed, request, next, sink);
    const observingNext: SendRequest = async (arm) => {
      const response = await next(arm);
      noteThrottling(arm, response);
      return response;
    };
    const topology = regions.topology;
    const addressed = regions.regionOf(request.url);
    const latencyClass = latencyClassOf(operation);
    const controls = requestControlsOf(request);
    const header = diagnosticsHeader("crossRegion", operation, addressed, controls);
    const timing = timingFor(topology, controls.hedging);
    // A feed's first page pins the next one to the region that serves it; nothing else needs a pin.
    const pinNextPage = documentFeedKinds.has(operation)
      ? (response: PipelineResponse, servedBy: RegionEndpoint): void => pins.pinNextPage(request, response, servedBy)
      : undefined;
    const skip = async (skipHeader: DiagnosticsHeader, reason: HedgeSkipReason): Promise<PipelineResponse> => {
      const response = await sendSkipped(request, observingNext, skipHeader, reason, sink);
      // Skipped before any ranking: the request went where it was addressed.
      if (addressed !== undefined) pinNextPage?.(response, addressed);
      return response;
    };
    if (typeof timing === "string") return skip(header, timing);
    const withTiming: DiagnosticsHeader =
      timing.kind === "fixed"
        ? { ...header, thresholdMs: timing.thresholdMs, thresholdStepMs: timing.thresholdStepMs, thresholdSource: timing.thresholdSource }
        : { ...header, thresholdStepMs: timing.thresholdStepMs, thresholdSource: "adaptive" };
    const isWrite = documentWriteKinds.has(operation);
    if (isWrite && !writeHedgingAllowed(topology)) return skip(withTiming, "notEligible");
    if (!isResendableBody(request)) return skip(withTiming, "streamBody");
    if (controls.region !== undefined) return skip(withTiming, "pinnedRegion");
    if (addressed === undefined) return skip(withTiming, "unknownRegion");
    const candidates = raceTargets(regions, addressed, isWrite ? "write" : "read", request.url, controls.excludedRegions);
    if (candidates.length < 2) return skip(withTiming, "singleRegion");
    const unthrottled = [addressed, ...candidates.slice(1).filter((region) => throttledForMs(region.name) === 0)];
    if (unthrottled.length < 2) return skip(withTiming, "regionThrottled");
    const ranked = isWrite ? { targets: unthrottled } : rank(addressed, unthrottled, latencyClass, controls);
    // Ranking may move the addressed region among the hedges; a throttled one must not be hedged into there either.
    const [rankedFirst, ...rankedHedges] = ranked.targets;
    const targets = rankedFirst === undefined ? unthrottled : [rankedFirst, ...rankedHedges.filter((region) => throttledForMs(region.name) === 0)];
    const primary = targets[0] ?? addressed;
    if (!sameRegion(primary, addressed)) {
      logger.verbose(`Sending a ${operation} to ${primary.name} instead of ${addressed.name} (${ranked.reason ?? "ranking"}).`);
      request.url = retarget(request.url, primary);
    }
    const rankedPrimary = ranked.reason !== undefined && ranked.reason !== "probe" && !sameRegion(primary, addressed) ? primary.name : undefined;
    const firstHedge = targets[1];
    const estimate =
      timing.kind === "adaptive"
        ? ((latencyClass !== undefined && firstHedge !== undefined
            ? decisions?.estimate(primary.name, firstHedge.name, latencyClass, timing.settings)
            : undefined) ??
          adaptiveThreshold(windows, timing.settings, latencyClass, {
            regions: targets.map((region) => region.name),
            ...(rankedPrimary !== undefined ? { rankedPrimary } : {}),
          }))
        : undefined;
    const thresholdMs = estimate?.thresholdMs ?? (timing.kind === "fixed" ? timing.thresholdMs : 0);
    const raceHeader: DiagnosticsHeader & Pick<HedgeDiagnostics, "thresholdRegion" | "ranking"> = {
      ...withTiming,
      primaryRegion: primary.name,
      thresholdMs,
      ...(estimate !== undefined ? { thresholdSource: estimate.source } : {}),
      ...(estimate?.region !== undefined ? { thresholdRegion: estimate.region } : {}),
      ...(ranked.reason !== undefined ? { ranking: { reason: ranked.reason, addressedRegion: addressed.name } } : {}),
    };
    const strategy: RaceStrategy = {
      delayBefore: (index) => (index === 1 ? thresholdMs : timing.thresholdStepMs),
      judge: (arm) => {
        if (!isFinalResult(arm.result)) return "next";
        // A hedge's final error (a lagging region's 404/0, a 401, a 409) must not beat a primary that may still succeed.
        return arm.index === 0 || isSuccessResult(arm.result) ? "win" : "hold";
      },
      earlyLaunchReason: "transientResult",
      ...(budget !== undefined ? { admit: () => budget.tryWithdraw(), release: () => budget.release() } : {}),
    };
    const plan = {
      targets,
      strategy,
      signer: options.signer,
      // A write loser still waiting for its connection would go out after its race was decided if left to drain.
      drain: isWrite ? undefined : drain,
      // A write keeps its session token: it is the read-your-writes guarantee of the write itself.
      hedgesWithoutSessionToken: options.hedgesWithoutSessionToken === true && !isWrite,
      onReturned: pinNextPage,
    };
    return sendHedged(request, observingNext, raceHeader, plan, sink);
  }


  return {
    name: crossRegionHedgingPolicyName,
    sendRequest(request, next) {
      // Reading the controls also strips their headers, so none reaches the wire even without excludedRegionsPolicy.
      requestControlsOf(request);
      const operation = classifyOperation(request);
      if (operation === "accountRead") return sendObservingAccount(regions, request, next);
      if (!documentReadKinds.has(operation) && !documentWriteKinds.has(operation)) return next(request);
      return sendDocumentRequest(request, next, operation);
    },
    metrics: () => recorder.snapshot(windows, regions, budget, throttledForMs, drain),
  };
}
