import type { PipelineRequest } from "@azure/core-rest-pipeline";
import type { AzureLogger } from "@azure/logger";
import { latencyClassOf } from "../caches/latencyWindows.js";
import type { AccountTopology, RegionCache, RegionEndpoint } from "../caches/regionCache.js";
import { sameRegion } from "../caches/regionNames.js";
import type { RankedTargets } from "../caches/regionRanking.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { documentWriteKinds } from "../cosmos/operationKind.js";
import { isRepeatableWrite } from "../cosmos/writeSafety.js";
import type { AdaptiveEstimate, AdaptiveThresholdSettings } from "./adaptiveThreshold.js";
import { adaptiveThreshold } from "./adaptiveThreshold.js";
import { isResendableBody, retarget } from "./cloneRequest.js";
import type { HedgePolicyKind, HedgeSkipReason } from "./diagnostics.js";
import type { DiagnosticsHeader } from "./hedgedSend.js";
import { diagnosticsHeader } from "./hedgedSend.js";
import type { RegionHealth } from "./regionHealth.js";
import type { RequestHedgingControls, RequestHedgingSetting } from "./requestControls.js";
import { raceTargets } from "./targets.js";

/** How long to wait before hedging, fixed or learned per request. */
export type Timing =
  | {
      readonly kind: "fixed";
      readonly thresholdMs: number;
      /** Between later hedges; unset where a race has one hedge only. */
      readonly thresholdStepMs?: number | undefined;
      readonly thresholdSource: "options" | "ppafDefault" | "request";
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

/** A race to run. The request has been re-pointed at its primary when the ranking chose another region. */
export interface RacePlan {
  readonly kind: "race";
  /** The arms' regions, the primary first. */
  readonly targets: readonly RegionEndpoint[];
  /** The diagnostics header: the threshold (`thresholdMs` is always set), the primary, the ranking. */
  readonly header: DiagnosticsHeader;
  /** Milliseconds between later hedges, when the race may have more than one. */
  readonly thresholdStepMs: number | undefined;
}

/**
 * Planning, shared by both hedging policies: whether a request may be
 * hedged (the skip-guard chain), when, and to which regions in which order.
 * With a {@link RegionHealth}, throttled regions are left out and reads are
 * ranked; without one (metadata reads), the read order stands.
 */
export class HedgePlanner {
  constructor(
    private readonly regions: RegionCache,
    private readonly strategy: PlanningStrategy,
    private readonly logger: AzureLogger,
    private readonly health?: RegionHealth,
  ) {}

  /**
   * Plans one request: `addressed` is the region its URL points at, found
   * once by the caller. May re-point `request.url` at a ranked primary.
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
    if (!isResendableBody(request)) return { kind: "skip", reason: "streamBody", header };
    if (controls.region !== undefined) return { kind: "skip", reason: "pinnedRegion", header };
    if (addressed === undefined) return { kind: "skip", reason: "unknownRegion", header };
    let candidates = raceTargets(this.regions, addressed, isWrite ? "write" : "read", request.url, controls.excludedRegions);
    if (candidates.length > this.strategy.maxArms) candidates = candidates.slice(0, this.strategy.maxArms);
    if (candidates.length < 2) return { kind: "skip", reason: "singleRegion", header };
    const { health } = this;
    if (health === undefined) return { kind: "race", targets: candidates, header, thresholdStepMs: timing.thresholdStepMs };

    const throttling = health.anyThrottled();
    const unthrottled = throttling ? [addressed, ...candidates.slice(1).filter((region) => health.throttledForMs(region.name) === 0)] : candidates;
    if (unthrottled.length < 2) return { kind: "skip", reason: "regionThrottled", header };
    const latencyClass = latencyClassOf(operation);
    const ranked: RankedTargets = isWrite ? { targets: unthrottled } : health.rank(addressed, unthrottled, latencyClass, controls.excludedRegions);
    let targets = ranked.targets;
    if (throttling) {
      // Ranking may move the addressed region among the hedges; a throttled one must not be hedged into there either.
      const [rankedFirst, ...rankedHedges] = ranked.targets;
      targets = rankedFirst === undefined ? unthrottled : [rankedFirst, ...rankedHedges.filter((region) => health.throttledForMs(region.name) === 0)];
    }
    const primary = targets[0] ?? addressed;
    const moved = !sameRegion(primary, addressed);
    if (moved) {
      this.logger.verbose(`Sending a ${operation} to ${primary.name} instead of ${addressed.name} (${ranked.reason ?? "ranking"}).`);
      request.url = retarget(request.url, primary);
    }
    header.primaryRegion = primary.name;
    if (timing.kind === "adaptive") {
      const rankedPrimary = ranked.reason !== undefined && ranked.reason !== "probe" && moved ? primary.name : undefined;
      const estimate = this.adaptiveEstimate(health, timing.settings, latencyClass, targets, rankedPrimary);
      header.thresholdMs = estimate.thresholdMs;
      header.thresholdSource = estimate.source;
      if (estimate.region !== undefined) header.thresholdRegion = estimate.region;
    }
    if (ranked.reason !== undefined) header.ranking = { reason: ranked.reason, addressedRegion: addressed.name };
    return { kind: "race", targets, header, thresholdStepMs: timing.thresholdStepMs };
  }

  /** The benefit rule's threshold for the primary and first hedge, or the baseline percentile while it has none. */
  private adaptiveEstimate(
    health: RegionHealth,
    settings: AdaptiveThresholdSettings,
    latencyClass: ReturnType<typeof latencyClassOf>,
    targets: readonly RegionEndpoint[],
    rankedPrimary: string | undefined,
  ): AdaptiveEstimate {
    const primary = targets[0];
    const firstHedge = targets[1];
    const benefit =
      latencyClass !== undefined && primary !== undefined && firstHedge !== undefined
        ? health.decisions?.estimate(primary.name, firstHedge.name, latencyClass, settings)
        : undefined;
    return (
      benefit ??
      adaptiveThreshold(health.windows, settings, latencyClass, {
        regions: targets.map((region) => region.name),
        ...(rankedPrimary !== undefined ? { rankedPrimary } : {}),
      })
    );
  }
}
