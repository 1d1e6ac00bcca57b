import type { AccountTopology } from "../topology/regionCache.js";
import { metadataHedgingEnvironmentVariable, readBooleanSwitch } from "../cosmos/environment.js";
import type { AdaptiveThresholdSettings } from "./adaptiveThreshold.js";
import type { HedgeSkipReason } from "../diagnostics/diagnostics.js";
import type { PlanningStrategy, Timing } from "./planner.js";
import type { RequestHedgingSetting } from "../request/requestModel.js";

/** The settings of data-plane hedging that decide its timing, validated. */
export interface CrossRegionTimingSettings {
  readonly enabled: boolean | "followAccount";
  /** The timing while hedging is on explicitly (and for a request that turns it on). */
  readonly explicit: Timing;
  /** The timing while the account reports PPAF, when hedging follows it. */
  readonly followingAccount: Timing;
  readonly enableMultiWriteRegionHedge: boolean;
}

/**
 * When the `crossRegionHedgingPolicy` hedges a request: its mode (on,
 * following the account's PPAF state, off), the account's switch, and the
 * request's own setting, which overrides the mode as in .NET (it may turn
 * hedging on for that request, with the explicit defaults for what it
 * leaves out). The mode's timings are built once, not per request.
 */
export class CrossRegionTiming implements PlanningStrategy {
  readonly policy = "crossRegion";
  readonly maxArms = Number.POSITIVE_INFINITY;

  constructor(private readonly settings: CrossRegionTimingSettings) {}

  timing(topology: AccountTopology | undefined, override: RequestHedgingSetting | undefined): Timing | HedgeSkipReason {
    if (override === false) return "disabled";
    if (topology?.crossRegionalHedgingDisabled) return "accountSwitch";
    const mode = this.modeTiming(topology);
    if (override === undefined) return mode;
    const base = typeof mode === "string" ? this.settings.explicit : mode;
    const thresholdStepMs = override.thresholdStep ?? base.thresholdStepMs;
    if (override.threshold === undefined) return { ...base, thresholdStepMs } as Timing;
    return { kind: "fixed", thresholdMs: override.threshold, thresholdStepMs, thresholdSource: "request" };
  }

  writesAllowed(topology: AccountTopology | undefined): boolean {
    return this.settings.enableMultiWriteRegionHedge && topology?.multipleWriteLocations === true;
  }

  private modeTiming(topology: AccountTopology | undefined): Timing | HedgeSkipReason {
    const { enabled } = this.settings;
    if (enabled === false) return "disabled";
    if (enabled === true) return this.settings.explicit;
    return topology?.perPartitionFailover ? this.settings.followingAccount : "disabled";
  }
}

/** Builds the two timings of {@link CrossRegionTimingSettings} from the policy's options and defaults. */
export function crossRegionTimings(
  adaptive: AdaptiveThresholdSettings | undefined,
  fixedThreshold: number | undefined,
  explicit: { readonly thresholdMs: number; readonly thresholdStepMs: number },
  ppaf: { readonly thresholdMs: number; readonly thresholdStepMs: number },
): { explicit: Timing; followingAccount: Timing } {
  const timing = (defaults: { readonly thresholdMs: number; readonly thresholdStepMs: number }, source: "options" | "ppafDefault"): Timing => {
    if (adaptive !== undefined) return { kind: "adaptive", thresholdStepMs: defaults.thresholdStepMs, settings: adaptive };
    if (fixedThreshold !== undefined) return { kind: "fixed", thresholdMs: fixedThreshold, thresholdStepMs: defaults.thresholdStepMs, thresholdSource: "options" };
    return { kind: "fixed", thresholdMs: defaults.thresholdMs, thresholdStepMs: defaults.thresholdStepMs, thresholdSource: source };
  };
  return { explicit: timing(explicit, "options"), followingAccount: timing(ppaf, "ppafDefault") };
}

/**
 * When the `metadataHedgingPolicy` hedges a metadata read: the
 * `AZURE_COSMOS_METADATA_HEDGING_ENABLED` switch (read on every request, so
 * that operators can switch hedging off without a restart), the request's
 * own setting, the account's switch, then the policy's `enabled` or the
 * account's PPAF state. One hedge at most; never a write.
 */
export class MetadataTiming implements PlanningStrategy {
  readonly policy = "metadata";
  readonly maxArms = 2;
  private readonly configured: Timing;

  constructor(
    private readonly enabled: boolean | undefined,
    thresholdMs: number,
    private readonly requestTimeout: number,
  ) {
    this.configured = { kind: "fixed", thresholdMs, thresholdSource: "options" };
  }

  timing(topology: AccountTopology | undefined, override: RequestHedgingSetting | undefined): Timing | HedgeSkipReason {
    const environment = readBooleanSwitch(metadataHedgingEnvironmentVariable);
    if (environment === false || override === false) return "disabled";
    if (topology?.crossRegionalHedgingDisabled) return "accountSwitch";
    // A request's own settings override the client's (they may turn hedging on); the threshold never reaches past the attempt's timeout.
    const enabled = environment ?? (override !== undefined || (this.enabled ?? topology?.perPartitionFailover === true));
    if (!enabled) return "disabled";
    const requested = override === undefined ? undefined : override.threshold;
    if (requested !== undefined && requested < this.requestTimeout) return { kind: "fixed", thresholdMs: requested, thresholdSource: "request" };
    return this.configured;
  }

  writesAllowed(): boolean {
    return false;
  }
}
