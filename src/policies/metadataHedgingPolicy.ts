import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { regionCacheOption } from "../topology/regionCache.js";
import { describe, optionalBoolean, optionalFunction, optionKeys, optionsObject, orDefault, positiveMilliseconds, readOnce } from "../options.js";
import { metadataHedgingEnvironmentVariable, readBooleanSwitch } from "../cosmos/environment.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { HedgeDiagnostics } from "../diagnostics/diagnostics.js";
import { HedgeBudget } from "../budget/hedgeBudget.js";
import type { DiagnosticsSink } from "../race/hedgedSend.js";
import { diagnosticsHeader } from "../diagnostics/diagnosticsHeader.js";
import { sendHedged, sendSkipped } from "../race/hedgedSend.js";
import type { LoserDrain, LoserDrainOptions } from "../race/loserDrain.js";
import { resolveLoserDrain } from "../race/loserDrain.js";
import { HedgePlanner } from "../planning/planner.js";
import { MetadataRaceStrategy } from "../race/raceStrategies.js";
import type { RequestHedgingControls } from "../request/requestModel.js";
import { MetadataTiming } from "../planning/timing.js";
import { policyLogger } from "../log.js";
import { boundsSockets, primaryMayDrain } from "../race/drainSockets.js";
import type { RequestHandler } from "./requestHandler.js";
import { policyOver } from "./requestHandler.js";
import type { RaceLearner } from "../diagnostics/diagnosticsHeader.js";
import type { RaceArm } from "../race/race.js";
import { drainedDurationMs } from "../learning/armFacts.js";
import type { SdkAttemptFacts } from "../cosmos/sdkBookkeeping.js";
import type { SdkBookkeeper } from "../learning/sdkBreakerWatch.js";
import { endpointDiscoveryMarks } from "../learning/sdkBreakerWatch.js";

/** The name of the {@link metadataHedgingPolicy}. */
export const metadataHedgingPolicyName = "metadataHedgingPolicy";

const logger = policyLogger(metadataHedgingPolicyName);

/** The defaults of metadata hedging, as the .NET SDK defines them. */
export const metadataHedgingDefaults = {
  /** Milliseconds to wait for the primary before the hedge. */
  threshold: 1500,
  /** Hedges in flight at once, per client. */
  maxConcurrentHedges: 8,
  /** The `@azure/cosmos` default `connectionPolicy.requestTimeout`. */
  requestTimeout: 60000,
} as const;

/** The threshold when none is given: the default, or half of a request timeout too short for it. */
export function metadataDefaultThresholdMs(requestTimeout: number): number {
  return Math.min(metadataHedgingDefaults.threshold, requestTimeout / 2);
}

/** Options of the {@link metadataHedgingPolicy}. */
export interface MetadataHedgingPolicyOptions {
  /**
   * The account's regions, shared with the client's other hedging policies.
   * Default: a new {@link RegionCache} that learns the topology from the
   * database-account responses passing through this policy.
   */
  regions?: RegionCache;
  /**
   * `true` hedges whatever the account says; `false` turns hedging off while
   * keeping the policy in place. Unset: hedge while the account reports
   * per-partition automatic failover (PPAF), as the other SDKs do. The
   * `AZURE_COSMOS_METADATA_HEDGING_ENABLED` environment variable overrides
   * this either way.
   */
  enabled?: boolean;
  /**
   * Milliseconds to wait for the primary before the hedge; must be below
   * `requestTimeout`. Default 1500, or half of `requestTimeout` when that is
   * smaller. A primary that fails sooner goes back to the SDK's retry, unhedged.
   */
  threshold?: number;
  /**
   * The client's per-attempt request timeout in milliseconds; a hedge that
   * could only launch after it would never run. Default 60000, as in `@azure/cosmos`.
   */
  requestTimeout?: number;
  /**
   * How many metadata hedges of this client may be in flight at once; a
   * read that finds them all taken goes to the primary alone. Default 8.
   */
  maxConcurrentHedges?: number;
  /**
   * Re-signs each arm before it is sent, for example {@link masterKeySigner}.
   * Policies after this one in the pipeline see every arm too, so a
   * `bearerTokenAuthenticationPolicy` signs each arm without a signer here.
   */
  signer?: RequestSigner;
  /** Called with the diagnostics of every metadata read this policy considered. Errors it throws, and rejections of a promise it returns, are logged and ignored. */
  onDiagnostics?: (diagnostics: HedgeDiagnostics) => void;
  /**
   * What happens to the arm still running when a race is decided: `true`
   * (the default) leaves it to finish in the background within the bounds
   * of {@link LoserDrainOptions}, so that its connection goes back to the
   * pool; `false` aborts it at once.
   */
  drainLosers?: boolean | LoserDrainOptions;
}

/** Every key of {@link MetadataHedgingPolicyOptions}, checked against the interface by the compiler. */
const metadataHedgingOptionKeys = optionKeys<MetadataHedgingPolicyOptions>({
  regions: true,
  enabled: true,
  threshold: true,
  requestTimeout: true,
  maxConcurrentHedges: true,
  signer: true,
  onDiagnostics: true,
  drainLosers: true,
});

/**
 * The operations this policy sends: the two metadata reads on every
 * operation's critical path, which it hedges, and the later pages of the
 * PartitionKeyRange feed, which it records as not hedged.
 */
const sentKinds: ReadonlySet<OperationKind> = new Set<OperationKind>(["collectionRead", "partitionKeyRangeReadFeed", "partitionKeyRangeReadFeedContinuation"]);

/** Every setting of a {@link metadataHedgingPolicy}, validated and with its defaults filled in. */
interface MetadataSettings {
  readonly regions: RegionCache;
  readonly enabled: boolean | undefined;
  readonly thresholdMs: number;
  readonly requestTimeout: number;
  readonly budget: HedgeBudget;
  readonly signer: RequestSigner | undefined;
  readonly onDiagnostics: ((diagnostics: HedgeDiagnostics) => void) | undefined;
  readonly drain: LoserDrain | undefined;
}

/** Validates the options, each error naming the option and the value, and returns every setting. */
function validate(given: MetadataHedgingPolicyOptions): MetadataSettings {
  // Each option is read once, from a copy: a getter or proxy could otherwise answer differently after it was validated.
  const options = readOnce(optionsObject("metadataHedgingPolicy options", given, metadataHedgingOptionKeys), metadataHedgingOptionKeys);
  optionalBoolean("enabled", options.enabled);
  const requestTimeout = positiveMilliseconds("requestTimeout", orDefault(options.requestTimeout, metadataHedgingDefaults.requestTimeout));
  let thresholdMs: number;
  if (options.threshold === undefined) {
    thresholdMs = metadataDefaultThresholdMs(requestTimeout);
  } else {
    thresholdMs = positiveMilliseconds("threshold", options.threshold);
    if (thresholdMs >= requestTimeout) {
      throw new RangeError(`threshold must be below requestTimeout (${requestTimeout} ms); got ${describe(options.threshold)}.`);
    }
  }
  optionalFunction("signer", options.signer);
  optionalFunction("onDiagnostics", options.onDiagnostics);
  const maxConcurrentHedges = orDefault(options.maxConcurrentHedges, metadataHedgingDefaults.maxConcurrentHedges);
  // Read now, so that a bad value is warned about when the client is created, not at its first metadata read.
  readBooleanSwitch(metadataHedgingEnvironmentVariable);
  const regions = regionCacheOption(options.regions);
  const budget = new HedgeBudget(maxConcurrentHedges, "maxConcurrentHedges");
  const drain = resolveLoserDrain(options.drainLosers);
  return {
    regions,
    enabled: options.enabled,
    thresholdMs,
    requestTimeout,
    budget,
    signer: options.signer,
    onDiagnostics: options.onDiagnostics,
    drain,
  };
}

/**
 * Hedges the two metadata reads every Cosmos DB operation waits on when a
 * client starts cold or refreshes its caches: the Collection read and the
 * first page of the PartitionKeyRange read feed. When the primary has not
 * answered within the threshold, one hedge goes to the next applicable read
 * region.
 *
 * The primary is authoritative: its answer (every 404 included, and a
 * regional failure, for the SDK's retry) is returned or rethrown verbatim
 * when it comes, even with a hedge in flight; a hedge wins only with a
 * success before it. A later page of a PartitionKeyRange feed goes where the SDK
 * sent it: its etag is valid in every region of the account.
 */
export function metadataHedgingPolicy(options: MetadataHedgingPolicyOptions = {}): PipelinePolicy {
  const hedging = metadataHedging(options);
  return policyOver(metadataHedgingPolicyName, hedging.regions, hedging);
}

/** What a metadata read's drained primary asks of the SDK's bookkeeping: its endpoint discovery only (no breaker counts metadata). */
type MetadataBookkeeper = Pick<SdkBookkeeper, "markForReads" | "attemptOf">;

/**
 * Hears how a metadata read's primary ended once it has drained, after a
 * hedge answered the SDK: an answer the SDK's endpoint discovery acts on (a
 * 403/1008 of a region no longer the account's) is told to it, as after an
 * answer it saw; otherwise the SDK would go on reading from the region, and
 * its data reads with it. A metadata read is never deferred: it is rare,
 * and one the SDK cannot be told of stays as it was.
 */
function drainedPrimaryListener(bookkeeping: MetadataBookkeeper, requestTimeoutMs: number): RaceLearner {
  const nothing = (): void => undefined;
  /** The SDK's facts of each primary left to drain, copied at the decision, to be told to the client that sent it. */
  const drainedPrimaries = new WeakMap<RaceArm, SdkAttemptFacts>();
  return {
    noteResponse: nothing,
    learnSkipped: nothing,
    learn(_header, outcome, request) {
      const primary = outcome.arms[0];
      if (primary?.drain === undefined || request === undefined) return;
      const facts = bookkeeping.attemptOf(request);
      if (facts !== undefined) drainedPrimaries.set(primary, facts);
    },
    learnDrained(_operation, arm) {
      if (arm.index !== 0 || !endpointDiscoveryMarks(arm.drain?.result)) return;
      // An answer later than the SDK's requestTimeout is one it never saw: it cut the attempt first.
      if ((drainedDurationMs(arm) ?? 0) >= requestTimeoutMs) return;
      bookkeeping.markForReads(arm.region.name, nothing, drainedPrimaries.get(arm));
    },
  };
}

/**
 * The hedging of a {@link metadataHedgingPolicy}, for a layer that reads each request's controls and classifies it itself.
 * @param bookkeeping - the SDK's endpoint discovery, which `withHedging` knows of (see `SdkBookkeeping`).
 */
export function metadataHedging(options: MetadataHedgingPolicyOptions, bookkeeping?: MetadataBookkeeper): RequestHandler & { readonly regions: RegionCache } {
  const settings = validate(options);
  const { regions, budget, drain, signer } = settings;
  const planner = new HedgePlanner(regions, new MetadataTiming(settings.enabled, settings.thresholdMs, settings.requestTimeout));
  const sink: DiagnosticsSink = { logger, onDiagnostics: settings.onDiagnostics, learner: bookkeeping === undefined ? undefined : drainedPrimaryListener(bookkeeping, settings.requestTimeout) };

  function sendMetadataRead(
    request: PipelineRequest,
    next: SendRequest,
    operation: OperationKind,
    controls: RequestHedgingControls,
  ): Promise<PipelineResponse> {
    const addressed = regions.regionOf(request.url);
    const plan = planner.plan(request, operation, addressed, controls);
    if (plan.kind === "skip") return sendSkipped(request, next, plan, sink);
    const { header } = plan;
    const drains = drain !== undefined && !boundsSockets(request);
    return sendHedged(request, next, header, {
      primaryRegion: plan.primary,
      planner,
      operation,
      controls,
      strategy: new MetadataRaceStrategy(header.thresholdMs ?? 0, budget),
      signer,
      drain: drains ? drain : undefined,
      // The SDK cuts a metadata read at its requestTimeout too, and stops once the race has answered it.
      callerTimeoutMs: settings.requestTimeout,
      eager: !drains || !primaryMayDrain(request),
    }, sink);
  }

  return {
    regions,
    kinds: sentKinds,
    send(request, next, operation, controls) {
      // A later page goes where the SDK sent it, unhedged: its etag is valid in every region, and hedging covers the first page only.
      if (operation === "partitionKeyRangeReadFeedContinuation") {
        const header = diagnosticsHeader("metadata", operation, regions.regionOf(request.url), controls);
        return sendSkipped(request, next, { reason: "continuationPage", header }, sink);
      }
      return sendMetadataRead(request, next, operation, controls);
    },
  };
}
