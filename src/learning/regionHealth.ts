import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { LatencyClass } from "./latencyWindows.js";
import { LatencyWindows, latencyClassOf } from "./latencyWindows.js";
import type { RegionCache, RegionEndpoint } from "../topology/regionCache.js";
import { normalizeRegionName, sameRegion } from "../topology/regionNames.js";
import type { RankedTargets, RegionRouting } from "./regionRanking.js";
import { DemotionTracker, ThompsonRanking } from "./regionRanking.js";
import { CosmosHeaders } from "../cosmos/headers.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { isReadKind } from "../cosmos/operationKind.js";
import type { AdaptiveThresholdSettings } from "../planning/adaptiveThreshold.js";
import { adaptiveThresholdDefaults } from "../planning/adaptiveThreshold.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { isSuccessResult, SubStatus, subStatusOf } from "../cosmos/statusTables.js";
import { decidedDurationMs, drainedDurationMs, timedOut } from "./armFacts.js";
import { HedgeDecisions } from "../planning/hedgeDecision.js";
import type { DiagnosticsHeader, RaceLearner } from "../diagnostics/diagnosticsHeader.js";
import type { LoadBudget } from "../budget/loadBudget.js";
import type { LoserDrain } from "../race/loserDrain.js";
import type { HedgingMetrics } from "../diagnostics/metrics.js";
import { HedgingMetricsRecorder } from "../diagnostics/metrics.js";
import type { RaceArm, RaceOutcome } from "../race/race.js";
import type { FixedThresholdSource, SdkBreakerSettings, SdkDeferralReason } from "./sdkBreakerWatch.js";
import { SdkBreakerWatch } from "./sdkBreakerWatch.js";
import type { HealthyTails } from "../race/raceStrategies.js";

/** The percentile of a region's healthy latencies that a read must outlast to count as a likely straggler. */
const healthyTailQuantile = 0.99;

/** `@azure/cosmos` 4.10.1 keeps a region it marked unavailable out of its requests this long (`Constants.LocationUnavailableExpirationTimeInMs`). */
const sdkLocationUnavailableMs = 5 * 60_000;

/**
 * The successes of reads won alone that a {@link RegionHealth} has not
 * learned yet, as numbers in preallocated arrays: adding one writes a slot,
 * allocating nothing.
 */
class AloneAnswers {
  private static readonly capacity = 64;
  private readonly regions: string[] = [];
  private readonly classes: LatencyClass[] = [];
  private readonly durations = new Float64Array(AloneAnswers.capacity);
  private readonly times = new Float64Array(AloneAnswers.capacity);
  private count = 0;

  /** @returns whether it is full, and must be drained before the next one. */
  add(region: string, latencyClass: LatencyClass, durationMs: number, at: number): boolean {
    const index = this.count++;
    this.regions[index] = region;
    this.classes[index] = latencyClass;
    this.durations[index] = durationMs;
    this.times[index] = at;
    return this.count === AloneAnswers.capacity;
  }

  /** Hands each one over in the order they came, and forgets them. */
  drain(learn: (region: string, latencyClass: LatencyClass, durationMs: number, at: number) => void): void {
    const count = this.count;
    if (count === 0) return;
    // Emptied first: learning from one may read the health, which drains again.
    this.count = 0;
    for (let index = 0; index < count; index++) learn(this.regions[index]!, this.classes[index]!, this.durations[index]!, this.times[index]!);
  }
}

/** How an arm's settlement reads to learning: an answer, a timeout, an error answer; `none` for an arm cut off or drained. */
type Settlement = "success" | "timeout" | "error" | "none";

/** How an answer of `status` reads to learning: a 408 bounds the region's latency, any other error only counts against it. */
function settlementOfStatus(status: number): Exclude<Settlement, "none"> {
  if (status < 400) return "success";
  return status === 408 ? "timeout" : "error";
}

/** Whether the SDK's attempt of an operation read or wrote, as its endpoint discovery tells them apart. */
function attemptKind(operation: OperationKind): "read" | "write" {
  return isReadKind(operation) ? "read" : "write";
}

function settlementOf(result: ArmResult | undefined): Settlement {
  if (result === undefined) return "none";
  if (result.response !== undefined) return settlementOfStatus(result.response.status);
  return timedOut(result) ? "timeout" : "error";
}

/** What a {@link RegionHealth} is set up with. */
export interface RegionHealthSettings {
  /** How reads choose their primary and hedge order. */
  readonly routing: RegionRouting;
  /** The adaptive threshold's settings, when the threshold is learned. */
  readonly adaptive?: AdaptiveThresholdSettings | undefined;
  /** How long a region that answered 429 is kept out of hedges. */
  readonly throttling: {
    /** Milliseconds, when the 429 has no `x-ms-retry-after-ms`. */
    readonly throttleWithoutRetryAfterMs: number;
    /** The longest `x-ms-retry-after-ms` honoured, in milliseconds. */
    readonly maxRetryAfterMs: number;
  };
  /** The SDK's partition-level circuit breaker, when the client may have it on (see {@link SdkBreakerWatch}). */
  readonly sdkBreaker?: SdkBreakerSettings | undefined;
}

/**
 * What one `crossRegionHedgingPolicy` knows of its regions' health, in one
 * place: the latency windows and the benefit rule's recent latencies,
 * throttling, the demotion streaks and probes (the demoted set itself is
 * the {@link RegionCache}'s, whose read order every policy follows), the
 * Thompson posteriors, and the metrics counters. It learns from the raw
 * outcome of every request (see {@link RaceLearner}), ranks the regions of
 * a read, and reports it all through {@link RegionHealth.snapshot}.
 */
export class RegionHealth implements RaceLearner, HealthyTails {
  private readonly latencies = new LatencyWindows();
  private readonly benefitRule: HedgeDecisions | undefined;
  /** Reads won alone not learned yet (see {@link RegionHealth.learnAlone}). */
  private readonly alone = new AloneAnswers();
  private readonly recorder = new HedgingMetricsRecorder();
  private readonly demotions: DemotionTracker | undefined;
  private readonly thompson: ThompsonRanking | undefined;
  /** Until when (on the `performance.now()` clock) each region, by normalized name, answers 429. */
  private readonly throttledUntil = new Map<string, number>();
  /** Until when each region, by normalized name, is kept out of hedges for a 403/1008 (see {@link RegionHealth.unavailableForHedges}). */
  private readonly unavailableUntil = new Map<string, number>();
  /** The drained losers counted as running in their region's window, until their drain ends (see learnDrained). */
  private readonly runningDrains = new WeakSet<RaceArm>();
  private readonly adaptive: AdaptiveThresholdSettings | undefined;
  private readonly throttling: RegionHealthSettings["throttling"];
  private readonly breaker: SdkBreakerWatch | undefined;

  constructor(
    private readonly regions: RegionCache,
    settings: RegionHealthSettings,
  ) {
    this.adaptive = settings.adaptive;
    this.throttling = settings.throttling;
    this.benefitRule = settings.adaptive !== undefined ? new HedgeDecisions(this.latencies) : undefined;
    this.demotions = settings.routing === "demotion" ? new DemotionTracker(regions) : undefined;
    this.thompson = settings.routing === "thompson" ? new ThompsonRanking() : undefined;
    this.breaker = settings.sdkBreaker !== undefined ? new SdkBreakerWatch(settings.sdkBreaker) : undefined;
  }

  /**
   * Notes a response of a region: a 429 keeps the region out of hedges until
   * its `x-ms-retry-after-ms` has passed; a 403/1008 for as long as the SDK
   * keeps its own requests away after one. A property, so that the race can
   * be handed it without binding it per request.
   */
  readonly noteResponse = (region: string | undefined, response: PipelineResponse): void => {
    if (region !== undefined) this.breaker?.answered(region, response);
    // Only a 503 or a 403 can be a failure the SDK's breaker counts (see breakerCounts): a success costs one comparison.
    if ((response.status === 503 || response.status === 403) && region !== undefined) {
      this.breaker?.seen(region, { response });
      if (response.status === 403 && subStatusOf(response) === SubStatus.databaseAccountNotFound) {
        this.unavailableUntil.set(normalizeRegionName(region), performance.now() + sdkLocationUnavailableMs);
      }
    }
    if (response.status !== 429 || region === undefined) return;
    const header = Number.parseFloat(response.headers.get(CosmosHeaders.retryAfterMs) ?? "");
    const waitMs = Number.isFinite(header) && header >= 0 ? Math.min(header, this.throttling.maxRetryAfterMs) : this.throttling.throttleWithoutRetryAfterMs;
    this.throttledUntil.set(normalizeRegionName(region), performance.now() + waitMs);
  };

  /** Whether any region may be kept out of hedges for a 403/1008 now: when none is, nothing needs filtering. */
  anyUnavailableForHedges(): boolean {
    return this.unavailableUntil.size > 0;
  }

  /**
   * Whether `region` answered 403/1008 (the account is not found there: a
   * region removed from it) within the SDK's window: `@azure/cosmos` keeps
   * its own requests away from such a region for five minutes, whether it
   * saw the answer or was told of it, so a hedge there is wasted; a hedge's
   * own such answer shows it as well, although the SDK never sees it.
   */
  unavailableForHedges(region: string): boolean {
    const key = normalizeRegionName(region);
    const until = this.unavailableUntil.get(key);
    if (until === undefined) return false;
    if (until > performance.now()) return true;
    this.unavailableUntil.delete(key);
    return false;
  }

  /**
   * The endpoints `@azure/cosmos`'s partition-level circuit breaker moved
   * the partition of `request` off, for as long as it lists them (see
   * `SdkBookkeeping.partitionMovedOff`): a hedge there goes where the
   * breaker found the partition failing. Asked only when a hedge is planned.
   */
  partitionMovedOff(request: PipelineRequest): readonly string[] | undefined {
    return this.breaker?.settings.bookkeeping?.partitionMovedOff(request);
  }

  /** Whether any region may be throttled now: when none is, nothing needs filtering. */
  anyThrottled(): boolean {
    return this.throttledUntil.size > 0;
  }

  /** Milliseconds until a region may be hedged into again; 0 when it is not throttled. */
  throttledForMs(region: string): number {
    const key = normalizeRegionName(region);
    const until = this.throttledUntil.get(key);
    if (until === undefined) return 0;
    const left = until - performance.now();
    if (left > 0) return left;
    this.throttledUntil.delete(key);
    return 0;
  }

  /**
   * The order of a read's arms, `candidates` being `addressed` first and
   * then its hedges in the read order: demotion's route, Thompson's sampled
   * order, or the candidates as they are.
   */
  rank(
    addressed: RegionEndpoint,
    candidates: readonly RegionEndpoint[],
    latencyClass: LatencyClass | undefined,
    excludedRegions: readonly string[] | undefined,
  ): RankedTargets {
    this.settle();
    if (this.demotions !== undefined) return this.demotions.route(addressed, candidates);
    if (this.thompson === undefined || latencyClass === undefined) return { targets: candidates };
    const usualFirst = this.regions.applicableRegions("read", excludedRegions)[0];
    // A read the SDK sent anywhere but its usual first region is its own failover or retry: only the hedges are reordered.
    if (!sameRegion(addressed, usualFirst)) {
      return { targets: [addressed, ...this.thompson.order(candidates.slice(1), latencyClass)], reason: "thompson" };
    }
    return { targets: this.thompson.order(candidates, latencyClass), reason: "thompson" };
  }

  /** The 99th percentile of a region's healthy (baseline) latencies in a class; `undefined` until its window holds `minSamples` of them. */
  healthyTailMs(region: string, latencyClass: LatencyClass): number | undefined {
    this.settle();
    return this.latencies.baseline(region, latencyClass, healthyTailQuantile, this.adaptive?.minSamples ?? adaptiveThresholdDefaults.minSamples);
  }

  learnSkipped(region: string | undefined, failure?: ArmResult): void {
    this.settle();
    this.recorder.recordSkipped(region);
    if (failure !== undefined && region !== undefined) this.breaker?.seen(region, failure);
  }

  /**
   * Whether the requests addressed to `region` go unhedged now, so that the
   * SDK's circuit breaker and endpoint discovery see its failures (see {@link SdkBreakerWatch}).
   */
  deferringToSdkBreaker(region: string): boolean {
    return this.breaker?.deferring(region) === true;
  }

  /** Why the requests addressed to `region` go unhedged now (see {@link RegionHealth.deferringToSdkBreaker}), or `undefined`. */
  sdkDeferral(region: string): SdkDeferralReason | undefined {
    return this.breaker?.deferral(region);
  }

  /** A read is planned to hedge after `thresholdMs` (see {@link SdkBreakerWatch.checkThreshold}). */
  checkThresholdAgainstSdkBreaker(thresholdMs: number, source: FixedThresholdSource): void {
    this.breaker?.checkThreshold(thresholdMs, source);
  }

  /** Learns from a finished race: metrics, latency windows, Thompson posteriors and demotion streaks. */
  learn(header: DiagnosticsHeader, outcome: RaceOutcome, request?: PipelineRequest): void {
    this.settle();
    const primaryArm = outcome.arms[0];
    this.recorder.record(outcome, header.primaryRegion);
    const { thresholdMs } = header;
    const latencyClass = latencyClassOf(header.operation);
    const returnedIndex = outcome.kind === "decided" ? outcome.returnedIndex : undefined;
    // The SDK gets the hedge's answer for the region it addressed: a failure of that attempt it never sees. A drained
    // primary is watched while it runs, and told of when its drain ends (see learnDrained).
    if (this.breaker !== undefined && primaryArm !== undefined && returnedIndex !== undefined && returnedIndex !== 0) {
      const { breaker } = this;
      // Copied now, at the decision: the SDK takes the hedge's answer and may reuse its request context.
      const sdk = request === undefined ? undefined : breaker.settings.bookkeeping?.attemptOf(request);
      if (primaryArm.drain !== undefined) breaker.lost(primaryArm.region.name, primaryArm, primaryArm.startedAt, sdk);
      else if (primaryArm.result !== undefined) breaker.hidden(primaryArm.region.name, primaryArm.result, decidedDurationMs(primaryArm), { kind: attemptKind(header.operation), sdk });
      else if (primaryArm.aborted === true) breaker.cut(primaryArm.region.name);
    }
    if (latencyClass === undefined || primaryArm === undefined) return;
    const returned = returnedIndex === undefined ? undefined : outcome.arms[returnedIndex];
    const winner = returned !== undefined && isSuccessResult(returned.result) ? returned : undefined;
    const winnerMs = winner === undefined ? undefined : decidedDurationMs(winner);
    const callerAborted = outcome.kind === "aborted";
    // A refused hedge leaves the arms still running unraced: their answers are no healthy baseline,
    // and letting them in would raise the threshold of the very region that needs hedging.
    const answerKind: "baseline" | "tail" = outcome.hedgeRefused ? "tail" : "baseline";
    const { latencies: windows, benefitRule: decisions, thompson } = this;
    // Arms that settled are learned by learnSettled; what is left are the arms cut off or drained at the decision.
    for (const arm of outcome.arms) {
      const duration = decidedDurationMs(arm);
      if (duration === undefined) continue;
      const region = arm.region.name;
      if (this.learnSettled(region, latencyClass, duration, settlementOf(arm.result), answerKind)) continue;
      if (arm.aborted === true || arm.drain !== undefined) {
        // A loser cut short before the winner's own time says little of its region; one that ran longer is known slower.
        const informative = callerAborted
          ? thresholdMs !== undefined && duration >= thresholdMs
          : winnerMs !== undefined && duration >= winnerMs;
        // A drained arm's latency is recorded when its drain ends, at its real length (see learnDrained); until then it
        // counts as running past its bound, so that the first stragglers of an episode teach the rule at once.
        if (informative && arm.drain === undefined) windows.record(region, latencyClass, duration, "censored");
        else if (informative) {
          windows.startRunning(region, latencyClass);
          this.runningDrains.add(arm);
        }
        // Any bound of a decided race may raise a hedge region's latency (a hedge that lost after 120 ms takes longer); a
        // drained arm tells more when its drain ends. The caller's abort cuts arms at any time: a hedge cut 10 ms after it
        // went would be a region's first latency, and made hedging look cheap.
        if (arm.aborted === true && (informative || !callerAborted)) decisions?.observe(region, latencyClass, duration, true);
        if (informative || !callerAborted) thompson?.observeCensored(region, latencyClass, duration);
      }
    }
    this.learnStreaks(outcome, primaryArm, winner, latencyClass, thresholdMs);
  }

  /** Per region and latency class, the recent latencies, with every read won alone learned. */
  get windows(): LatencyWindows {
    this.settle();
    return this.latencies;
  }

  /** The benefit rule, when the threshold is adaptive, with every read won alone learned. */
  get decisions(): HedgeDecisions | undefined {
    this.settle();
    return this.benefitRule;
  }

  /**
   * Learns from a race that ended on its primary's answer before any hedge
   * was due (won alone, or the transient answer handed back to the SDK's
   * retry), from its facts: what {@link RegionHealth.learn} learns from
   * such a race, without an outcome built for it. Nearly every read ends
   * so, and its success is kept as a few numbers until the next time
   * anything reads what it teaches (a race's learning, a ranking, a
   * percentile, the metrics) or a few dozen have gathered: learning from a
   * read then touches one small object instead of the windows, counters and
   * streaks every time. Each is learned as of its own time, in the order
   * they came.
   * @param status - the status of the primary's answer.
   * @param at - when it answered (`performance.now()`).
   */
  learnAlone(region: string, operation: OperationKind, durationMs: number, status: number, thresholdMs: number | undefined, at: number): void {
    const success = status < 400;
    const latencyClass = latencyClassOf(operation);
    // A success with no streak to reset and no demotion to lift teaches only a count and a latency: kept until read.
    // Otherwise it may change the read order (RegionCache.demotedRegions), which is never left behind.
    if (success && latencyClass !== undefined && (this.demotions === undefined || this.demotions.idle)) {
      if (this.alone.add(region, latencyClass, durationMs, at)) this.settle();
      return;
    }
    this.settle();
    this.recorder.recordAlone(region);
    if (latencyClass === undefined) return;
    this.learnSettled(region, latencyClass, durationMs, settlementOfStatus(status), "baseline", at);
    if (success && this.demotions !== undefined) {
      this.demotions.observe({ primary: region, primaryWonInMs: durationMs }, () => this.restoreWithinMs(latencyClass, thresholdMs));
    }
  }

  /** Learns every read won alone not learned yet: whatever reads what they teach calls this first. */
  settle(): void {
    this.alone.drain(this.learnAnswer);
  }

  /** A success kept by {@link RegionHealth.learnAlone}, learned as of its own time. */
  private readonly learnAnswer = (region: string, latencyClass: LatencyClass, durationMs: number, at: number): void => {
    this.recorder.recordAlone(region);
    this.learnSettled(region, latencyClass, durationMs, "success", "baseline", at);
  };

  /**
   * What an arm that settled (rather than being cut off or drained)
   * teaches: an answer's latency, a timeout's bound, or, for an error, only
   * that the region is failing.
   * @returns whether the arm settled.
   */
  private learnSettled(region: string, latencyClass: LatencyClass, duration: number, settlement: Settlement, answerKind: "baseline" | "tail", at = performance.now()): boolean {
    const { latencies: windows, benefitRule: decisions, thompson } = this;
    if (settlement === "success") {
      windows.record(region, latencyClass, duration, answerKind, at);
      decisions?.observe(region, latencyClass, duration, false);
      thompson?.observe(region, latencyClass, duration);
      return true;
    }
    if (settlement === "timeout") {
      windows.record(region, latencyClass, duration, "censored", at);
      decisions?.observe(region, latencyClass, duration, true);
      thompson?.observeCensored(region, latencyClass, duration);
      return true;
    }
    if (settlement === "none") return false;
    // An error answer, however fast, is no latency: it only keeps the region from being ranked first.
    thompson?.observeFailure(region, latencyClass);
    return true;
  }

  /**
   * A drained loser's whole latency, once its drain ends: a hedge that lost
   * to the primary is otherwise known only as a bound, and its region's
   * hedge latency is what the benefit rule needs. A drain cut at its limits
   * still leaves a bound, longer than the one taken at the decision.
   */
  learnDrained(operation: OperationKind, arm: RaceArm): void {
    this.settle();
    this.recorder.recordDrainEnd(arm);
    const latencyClass = latencyClassOf(operation);
    const duration = drainedDurationMs(arm);
    // A drained primary lost to a hedge whose answer the SDK got: how it ended at last is hidden from the SDK's breaker.
    if (arm.index === 0 && this.breaker !== undefined) {
      const end = arm.drain?.end;
      // Cut at the drain's time bound before the SDK's own timeout would have judged it: how it ends is not known. (A
      // drain cut at its byte bound has its answer.)
      if (end === "timeLimit" && (duration ?? 0) < this.breaker.settings.readTimeoutMs) this.breaker.cut(arm.region.name, arm);
      else this.breaker.hidden(arm.region.name, end === "callerAborted" ? undefined : arm.drain?.result, duration, { primary: arm, kind: attemptKind(operation) });
    }
    if (latencyClass !== undefined && this.runningDrains.delete(arm)) this.latencies.stopRunning(arm.region.name, latencyClass);
    if (latencyClass === undefined || duration === undefined) return;
    // The region's percentiles show what its losers really took: an answer as a tail latency (never the healthy
    // baseline, which would raise the threshold of the region that is slow), a drain cut short as the bound it reached.
    this.latencies.record(arm.region.name, latencyClass, duration, isSuccessResult(arm.drain?.result) ? "tail" : "censored");
    if (this.benefitRule === undefined) return;
    if (isSuccessResult(arm.drain?.result)) this.benefitRule.observe(arm.region.name, latencyClass, duration, false);
    else if (arm.drain?.end !== "settled") this.benefitRule.observe(arm.region.name, latencyClass, duration, true);
  }

  /** The metrics snapshot: the counters, the latency windows, the demotions and throttling of the regions, the budget and the drains. */
  snapshot(budget: LoadBudget | undefined, drain: LoserDrain | undefined): HedgingMetrics {
    this.settle();
    return this.recorder.snapshot(this.latencies, this.regions, budget, (region) => this.throttledForMs(region), drain);
  }

  /** Demotion streaks: a hedge win extends the primary's, a fast primary win ends it and may restore the primary. */
  private learnStreaks(
    outcome: RaceOutcome,
    primaryArm: RaceArm,
    winner: RaceArm | undefined,
    latencyClass: LatencyClass,
    thresholdMs: number | undefined,
  ): void {
    if (this.demotions === undefined || outcome.kind !== "decided" || outcome.fallback) return;
    if (outcome.returnedIndex > 0) {
      if (winner !== undefined) this.demotions.observe({ primary: primaryArm.region.name, hedgeWinner: winner.region.name });
      return;
    }
    const primaryMs = decidedDurationMs(primaryArm);
    // A primary that won only because the budget kept its hedge home proves nothing about its speed.
    if (isSuccessResult(primaryArm.result) && primaryMs !== undefined && !outcome.hedgeRefused) {
      this.demotions.observe({ primary: primaryArm.region.name, primaryWonInMs: primaryMs }, () => this.restoreWithinMs(latencyClass, thresholdMs));
    }
  }

  /** The healthy latency a demoted region must match to be restored: the best baseline, or the threshold without one. */
  private restoreWithinMs(latencyClass: LatencyClass, thresholdMs: number | undefined): number {
    const settings = this.adaptive ?? {
      quantile: 1 - adaptiveThresholdDefaults.maxExtraLoad,
      floor: adaptiveThresholdDefaults.floor,
      minSamples: adaptiveThresholdDefaults.minSamples,
    };
    let best: number | undefined;
    for (const region of this.regions.applicableRegions("read")) {
      const baseline = this.latencies.baseline(region.name, latencyClass, settings.quantile, settings.minSamples);
      if (baseline !== undefined && (best === undefined || baseline < best)) best = baseline;
    }
    if (best !== undefined) return Math.max(settings.floor, best);
    return thresholdMs ?? 0;
  }
}
