import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { latencyClassOf } from "../learning/latencyWindows.js";
import type { AccountTopology, RegionCache, RegionEndpoint } from "../topology/regionCache.js";
import { sameRegion } from "../topology/regionNames.js";
import type { RankedTargets } from "../learning/regionRanking.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { documentWriteKinds } from "../cosmos/operationKind.js";
import { isRepeatableWrite } from "../cosmos/writeSafety.js";
import type { AdaptiveEstimate, AdaptiveThresholdSettings } from "./adaptiveThreshold.js";
import { adaptiveThreshold } from "./adaptiveThreshold.js";
import { isResendableBody } from "../race/cloneRequest.js";
import type { HedgePolicyKind, HedgeSkipReason } from "../diagnostics/diagnostics.js";
import type { DiagnosticsHeader } from "../diagnostics/diagnosticsHeader.js";
import { diagnosticsHeader } from "../diagnostics/diagnosticsHeader.js";
import type { RegionHealth } from "../learning/regionHealth.js";
import type { FixedThresholdSource } from "../learning/sdkBreakerWatch.js";
import type { RequestHedgingControls, RequestHedgingSetting } from "../request/requestModel.js";
import { notAmongEndpoints, raceTargets } from "./targets.js";

/** How long to wait before hedging, fixed or learned per request. */
export type Timing =
  | {
      readonly kind: "fixed";
      readonly thresholdMs: number;
      /** Between later hedges; unset where a race has one hedge only. */
      readonly thresholdStepMs?: number | undefined;
      readonly thresholdSource: FixedThresholdSource;
    }
  | { readonly kind: "adaptive"; readonly thresholdStepMs: number; readonly settings: AdaptiveThresholdSettings };

/** What differs between the hedging policies' planning. */
export interface PlanningStrategy {
  readonly policy: HedgePolicyKind;
  /**
   * The timing of a request, or why it is not hedged at all: the policy's
   * mode, the request's own setting, the account's switch.
   */
  timing(topology: AccountTopology | undefined, override: RequestHedgingSetting | undefined): Timing | HedgeSkipReason;
  /** Whether a write may be hedged on this account. */
  writesAllowed(topology: AccountTopology | undefined): boolean;
  /** The most arms a race may have, the primary included. */
  readonly maxArms: number;
}

/** A request the planner decided not to hedge. */
export interface SkipPlan {
  readonly kind: "skip";
  readonly reason: HedgeSkipReason;
  /** The diagnostics header, as far as planning got. */
  readonly header: DiagnosticsHeader;
}

/**
 * A race to run: the primary is the request as it was addressed, always;
 * its hedges are planned when the first one is due (see {@link HedgePlanner.hedges}).
 */
export interface RacePlan {
  readonly kind: "race";
  /** Where the request is addressed: the primary's region. */
  readonly primary: RegionEndpoint;
  /** The diagnostics header: the threshold (`thresholdMs` is always set), the primary, later the ranking. */
  readonly header: DiagnosticsHeader;
  /** Milliseconds between later hedges, when the race may have more than one. */
  readonly thresholdStepMs: number | undefined;
  /**
   * The hedges, when planning them was needed up front (an adaptive
   * threshold depends on the first; exclusions may leave none). When the
   * first is due, {@link HedgePlanner.stillOpen} drops those excluded or
   * throttled since.
   */
  readonly hedges?: readonly RegionEndpoint[] | undefined;
}

/**
 * Planning, shared by both hedging policies: whether a request may be
 * hedged (the skip-guard chain), when, and to which regions in which order.
 * With a {@link RegionHealth}, throttled regions are left out and the
 * hedges of a read are ranked; without one (metadata reads), the read order
 * stands. The primary is never moved: it goes where the SDK sent it, and
 * ranking orders only the hedges.
 */
export class HedgePlanner {
  constructor(
    private readonly regions: RegionCache,
    private readonly strategy: PlanningStrategy,
    private readonly health?: RegionHealth,
  ) {}

  /**
   * Plans what must be known before a request is sent: whether it may be
   * hedged and its threshold. `addressed` is the region its URL points at,
   * found once by the caller. Which regions the hedges go to waits for
   * {@link HedgePlanner.hedges}, except with an adaptive threshold, which
   * depends on the first hedge's region and so plans them now.
   */
  plan(request: PipelineRequest, operation: OperationKind, addressed: RegionEndpoint | undefined, controls: RequestHedgingControls): SkipPlan | RacePlan {
    const header = diagnosticsHeader(this.strategy.policy, operation, addressed, controls);
    const topology = this.regions.topology;
    const timing = this.strategy.timing(topology, controls.hedging);
    if (typeof timing === "string") return { kind: "skip", reason: timing, header };
    if (timing.kind === "fixed") header.thresholdMs = timing.thresholdMs;
    if (timing.thresholdStepMs !== undefined) header.thresholdStepMs = timing.thresholdStepMs;
    header.thresholdSource = timing.kind === "fixed" ? timing.thresholdSource : "adaptive";
    const isWrite = documentWriteKinds.has(operation);
    // A write goes twice only where a second application cannot change the result.
    if (isWrite && (!this.strategy.writesAllowed(topology) || !isRepeatableWrite(request, operation))) {
      return { kind: "skip", reason: "notEligible", header };
    }
    // The SDK's partition-level read timeout may come on with the account's PPAF, long after the options were checked.
    if (!isWrite && timing.kind === "fixed") this.health?.checkThresholdAgainstSdkBreaker(timing.thresholdMs, timing.thresholdSource);
    if (!isResendableBody(request)) return { kind: "skip", reason: "streamBody", header };
    if (controls.region !== undefined) return { kind: "skip", reason: "pinnedRegion", header };
    // The SDK moved or repeated this attempt itself (a 503, a timeout, a 429 backoff): its first attempt had its hedges,
    // and hedging every retry too would multiply the requests of an outage.
    if (controls.sdkRetry === true) return { kind: "skip", reason: "sdkRetry", header };
    if (addressed === undefined) return { kind: "skip", reason: "unknownRegion", header };
    // A hedge that won hid a failure of this region from the SDK's circuit breaker or endpoint discovery: it sees the next ones itself.
    const deferral = this.health?.sdkDeferral(addressed.name);
    if (deferral !== undefined) return { kind: "skip", reason: deferral, header };
    // An account of one region is known at once; which regions exclusions and throttling leave waits for the first hedge.
    const accountRegions = isWrite ? topology?.writeRegions : topology?.readRegions;
    if (accountRegions !== undefined && accountRegions.length < 2) return { kind: "skip", reason: "singleRegion", header };
    // Exclusions (rare) may leave no region to hedge into: planned now, so that such a request is recorded as skipped.
    const excluding = (controls.excludedRegions?.length ?? 0) > 0 || this.regions.excludedRegions.length > 0;
    if (timing.kind === "fixed" && !excluding) return { kind: "race", primary: addressed, header, thresholdStepMs: timing.thresholdStepMs };
    const hedges = this.hedges(request, operation, addressed, controls, header);
    if (typeof hedges === "string") return { kind: "skip", reason: hedges, header };
    if (timing.kind === "fixed") return { kind: "race", primary: addressed, header, thresholdStepMs: timing.thresholdStepMs, hedges };
    const { health } = this;
    const latencyClass = latencyClassOf(operation);
    const estimate =
      health === undefined ? undefined : this.adaptiveEstimate(health, timing.settings, latencyClass, [addressed, ...hedges]);
    header.thresholdMs = estimate?.thresholdMs ?? 0;
    if (estimate !== undefined) {
      header.thresholdSource = estimate.source;
      if (estimate.region !== undefined) header.thresholdRegion = estimate.region;
    }
    return { kind: "race", primary: addressed, header, thresholdStepMs: timing.thresholdStepMs, hedges };
  }

  /**
   * The hedges of a request in launch order, or why it has none: every
   * applicable region but the primary, on the request's scheme, without the
   * throttled ones, ranked (reads only). Records the ranking in `header`.
   */
  hedges(
    request: PipelineRequest,
    operation: OperationKind,
    addressed: RegionEndpoint,
    controls: RequestHedgingControls,
    header: DiagnosticsHeader,
  ): readonly RegionEndpoint[] | HedgeSkipReason {
    // The read order follows the demotions, which the reads won alone and not yet learned may change.
    this.health?.settle();
    const isWrite = documentWriteKinds.has(operation);
    let candidates = this.withoutUnavailable(raceTargets(this.regions, addressed, isWrite ? "write" : "read", request.url, controls.excludedRegions), 1, request);
    if (candidates.length > this.strategy.maxArms) candidates = candidates.slice(0, this.strategy.maxArms);
    if (candidates.length < 2) return "singleRegion";
    const { health } = this;
    if (health === undefined) return candidates.slice(1);
    const unthrottled = [addressed, ...this.withoutThrottled(candidates.slice(1))];
    if (unthrottled.length < 2) return "regionThrottled";
    if (isWrite) return unthrottled.slice(1);
    const ranked: RankedTargets = health.rank(addressed, unthrottled, latencyClassOf(operation), controls.excludedRegions);
    // The ranking may put another region first; the primary stays where the SDK sent it, and only the hedges follow the ranking's order.
    const hedges = ranked.targets.filter((region) => !sameRegion(region, addressed));
    if (ranked.reason !== undefined) header.ranking = { reason: ranked.reason, addressedRegion: addressed.name };
    return hedges.length === 0 ? "singleRegion" : hedges;
  }

  /**
   * The hedges planned at a request's start, as they stand when the first
   * is due: without the regions excluded (the client's exclusions changed)
   * or throttled since, in the order planned. Not planned afresh: a ranking
   * decided the order once (a demoted region's probe is taken when it is
   * planned), and the adaptive threshold was timed by the first hedge. A
   * region let back in meanwhile is not added.
   */
  stillOpen(
    request: PipelineRequest,
    operation: OperationKind,
    addressed: RegionEndpoint,
    controls: RequestHedgingControls,
    planned: readonly RegionEndpoint[],
  ): readonly RegionEndpoint[] | HedgeSkipReason {
    this.health?.settle();
    const applicable = raceTargets(this.regions, addressed, documentWriteKinds.has(operation) ? "write" : "read", request.url, controls.excludedRegions);
    const open = this.withoutUnavailable(
      planned.filter((region) => applicable.some((each) => sameRegion(each, region))),
      0,
      request,
    );
    if (open.length === 0) return "singleRegion";
    const unthrottled = this.withoutThrottled(open);
    return unthrottled.length === 0 ? "regionThrottled" : unthrottled;
  }

  /**
   * `regions` without those where the SDK sends nothing of `request`'s
   * now, from index `from` on (the primary, at 0 of a race's targets, goes
   * where the SDK sent it): those that answered 403/1008 lately (see
   * {@link RegionHealth.unavailableForHedges}), and those its
   * partition-level circuit breaker moved the request's partition off (see
   * {@link RegionHealth.partitionMovedOff}); the list itself when none may be.
   */
  private withoutUnavailable(regions: readonly RegionEndpoint[], from: number, request: PipelineRequest): readonly RegionEndpoint[] {
    const { health } = this;
    if (health === undefined) return regions;
    const stillServed = notAmongEndpoints(this.regions, health.partitionMovedOff(request));
    if (stillServed === undefined && !health.anyUnavailableForHedges()) return regions;
    return regions.filter((region, index) => index < from || (!health.unavailableForHedges(region.name) && (stillServed?.(region) ?? true)));
  }

  /** `regions` without those answering 429 now; the list itself when none may be. */
  private withoutThrottled(regions: readonly RegionEndpoint[]): readonly RegionEndpoint[] {
    const { health } = this;
    if (health === undefined || !health.anyThrottled()) return regions;
    return regions.filter((region) => health.throttledForMs(region.name) === 0);
  }

  /** The benefit rule's threshold for the primary and first hedge, or the baseline percentile while it has none. */
  private adaptiveEstimate(
    health: RegionHealth,
    settings: AdaptiveThresholdSettings,
    latencyClass: ReturnType<typeof latencyClassOf>,
    targets: readonly RegionEndpoint[],
  ): AdaptiveEstimate {
    const primary = targets[0];
    const firstHedge = targets[1];
    const benefit =
      latencyClass !== undefined && primary !== undefined && firstHedge !== undefined
        ? health.decisions?.estimate(primary.name, firstHedge.name, latencyClass, settings)
        : undefined;
    return (
      benefit ??
      // Timed by the primary's own latencies: the best region's baseline would hedge at once a read the SDK sent elsewhere
      // (its failover, or a retry).
      adaptiveThreshold(health.windows, settings, latencyClass, {
        regions: targets.map((region) => region.name),
        ...(primary !== undefined ? { rankedPrimary: primary.name } : {}),
      })
    );
  }
}
