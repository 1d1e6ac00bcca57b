import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { AccountTopology } from "../caches/regionCache.js";
import { RegionCache } from "../caches/regionCache.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { classifyOperation, documentReadKinds, documentWriteKinds } from "../cosmos/operationKind.js";
import { isFinalResult } from "../cosmos/statusTables.js";
import { isResendableBody } from "../hedging/cloneRequest.js";
import type { HedgeDiagnostics, HedgeSkipReason } from "../hedging/diagnostics.js";
import type { DiagnosticsHeader, DiagnosticsSink } from "../hedging/hedgedSend.js";
import { sendHedged, sendSkipped } from "../hedging/hedgedSend.js";
import type { RaceStrategy } from "../hedging/race.js";
import type { RequestHedgingControls } from "../hedging/requestControls.js";
import { requestControlsOf } from "../hedging/requestControls.js";
import { raceTargets } from "../hedging/targets.js";
import { optionalBoolean, optionalFunction, optionsObject, positiveMilliseconds } from "../hedging/validation.js";
import { describe } from "../caches/regionNames.js";
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
   * Milliseconds to wait for the primary before the first hedge. Default 500
   * when enabled explicitly; `min(1000, requestTimeout / 2)` when following
   * the account's PPAF state.
   */
  threshold?: number;
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
  /** Called with the diagnostics of every document request this policy considered. Errors it throws are logged and ignored. */
  onDiagnostics?: (diagnostics: HedgeDiagnostics) => void;
}

interface ResolvedThresholds {
  readonly thresholdMs: number;
  readonly thresholdStepMs: number;
  readonly thresholdSource: "options" | "ppafDefault" | "request";
}

function validate(options: CrossRegionHedgingPolicyOptions): Required<Pick<CrossRegionHedgingPolicyOptions, "enabled" | "requestTimeout">> {
  optionsObject("crossRegionHedgingPolicy options", options);
  const { enabled = true } = options;
  if (enabled !== true && enabled !== false && enabled !== "followAccount") {
    throw new TypeError(`enabled must be true, false or "followAccount"; got ${describe(enabled)}.`);
  }
  if (options.threshold !== undefined) positiveMilliseconds("threshold", options.threshold);
  if (options.thresholdStep !== undefined) positiveMilliseconds("thresholdStep", options.thresholdStep);
  const requestTimeout = positiveMilliseconds("requestTimeout", options.requestTimeout ?? crossRegionHedgingDefaults.requestTimeout);
  optionalBoolean("enableMultiWriteRegionHedge", options.enableMultiWriteRegionHedge);
  optionalFunction("signer", options.signer);
  optionalFunction("onDiagnostics", options.onDiagnostics);
  if (options.regions !== undefined && !(options.regions instanceof RegionCache)) {
    throw new TypeError(`regions must be a RegionCache; got ${describe(options.regions)}.`);
  }
  return { enabled, requestTimeout };
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
 */
export function crossRegionHedgingPolicy(options: CrossRegionHedgingPolicyOptions = {}): PipelinePolicy {
  const { enabled, requestTimeout } = validate(options);
  const regions = options.regions ?? new RegionCache();
  const sink: DiagnosticsSink = { logger, onDiagnostics: options.onDiagnostics };

  const thresholdsFor = (
    topology: AccountTopology | undefined,
    override: RequestHedgingControls["hedging"],
  ): ResolvedThresholds | HedgeSkipReason => {
    if (override === false) return "disabled";
    if (topology?.crossRegionalHedgingDisabled) return "accountSwitch";
    if (override !== undefined) {
      return {
        thresholdMs: override.threshold ?? options.threshold ?? crossRegionHedgingDefaults.threshold,
        thresholdStepMs: override.thresholdStep ?? options.thresholdStep ?? crossRegionHedgingDefaults.thresholdStep,
        thresholdSource: "request",
      };
    }
    if (enabled === false) return "disabled";
    if (enabled === true) {
      return {
        thresholdMs: options.threshold ?? crossRegionHedgingDefaults.threshold,
        thresholdStepMs: options.thresholdStep ?? crossRegionHedgingDefaults.thresholdStep,
        thresholdSource: "options",
      };
    }
    if (!topology?.perPartitionFailover) return "disabled";
    return {
      thresholdMs: options.threshold ?? Math.min(crossRegionHedgingDefaults.ppafThresholdCeiling, requestTimeout / 2),
      thresholdStepMs: options.thresholdStep ?? crossRegionHedgingDefaults.ppafThresholdStep,
      thresholdSource: options.threshold === undefined ? "ppafDefault" : "options",
    };
  };

  const writeHedgingAllowed = (topology: AccountTopology | undefined): boolean =>
    options.enableMultiWriteRegionHedge === true && topology?.multipleWriteLocations === true;

  async function sendDocumentRequest(request: PipelineRequest, next: SendRequest, operation: OperationKind): Promise<PipelineResponse> {
    const topology = regions.topology;
    const primary = regions.regionOf(request.url);
    const controls = requestControlsOf(request);
    const header: DiagnosticsHeader = {
      policy: "crossRegion",
      operation,
      ...(primary ? { primaryRegion: primary.name } : {}),
      ...(controls.routing !== undefined ? { routing: controls.routing } : {}),
    };
    const thresholds = thresholdsFor(topology, controls.hedging);
    if (typeof thresholds === "string") return sendSkipped(request, next, header, thresholds, sink);
    const withThresholds: DiagnosticsHeader = { ...header, ...thresholds };
    const isWrite = documentWriteKinds.has(operation);
    if (isWrite && !writeHedgingAllowed(topology)) return sendSkipped(request, next, withThresholds, "notEligible", sink);
    if (!isResendableBody(request)) return sendSkipped(request, next, withThresholds, "streamBody", sink);
    if (controls.region !== undefined) return sendSkipped(request, next, withThresholds, "pinnedRegion", sink);
    if (primary === undefined) return sendSkipped(request, next, withThresholds, "unknownRegion", sink);
    const targets = raceTargets(regions, primary, isWrite ? "write" : "read", request.url, controls.excludedRegions);
    if (targets.length < 2) return sendSkipped(request, next, withThresholds, "singleRegion", sink);
    const strategy: RaceStrategy = {
      delayBefore: (index) => (index === 1 ? thresholds.thresholdMs : thresholds.thresholdStepMs),
      judge: (arm) => (isFinalResult(arm.result) ? "win" : "next"),
      earlyLaunchReason: "transientResult",
    };
    return sendHedged(request, next, withThresholds, { targets, strategy, signer: options.signer }, sink);
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
  };
}
