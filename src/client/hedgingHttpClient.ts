import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient, Pipeline, PipelinePolicy, PipelineRequest, SendRequest } from "@azure/core-rest-pipeline";
import { RegionCache } from "../topology/regionCache.js";
import type { RegionCacheOptions } from "../topology/regionCache.js";
import { describe, optionKeys, optionalFunction, optionsObject, readOnce, regionNameList } from "../options.js";
import type { RequestSigner } from "../cosmos/masterKeySigner.js";
import type { HedgeDiagnostics } from "../diagnostics/diagnostics.js";
import type { HedgingMetrics } from "../diagnostics/metrics.js";
import type { CrossRegionHedgingPolicyOptions } from "../policies/crossRegionHedgingPolicy.js";
import { crossRegionHedging } from "../policies/crossRegionHedgingPolicy.js";
import type { MetadataHedgingPolicyOptions } from "../policies/metadataHedgingPolicy.js";
import { metadataHedging } from "../policies/metadataHedgingPolicy.js";
import { regionSteering } from "../policies/excludedRegionsPolicy.js";
import { hedgingLayer } from "./hedgingLayer.js";
import { hedgingPipeline } from "./hedgingPipeline.js";
import { noteHandedAttempt, operationHeaderName } from "../diagnostics/dispatchRecording.js";
import type { SdkAttempt } from "../cosmos/attemptHandoff.js";
import { takeHandedOver } from "../cosmos/attemptHandoff.js";
import { loadOpenTelemetry } from "../diagnostics/otelMetrics.js";
import { markForCoreTransport } from "../race/armAbort.js";
import { yieldSocketsTo } from "../race/socketHolders.js";
import type { RequestHedgingControls } from "../request/requestModel.js";
import { adoptSdkOptions, hasScopedControls, requestControlsOf, setRequestControls } from "../request/requestControls.js";
import { logger } from "../log.js";
import { hedgingClientSummary } from "./hedgingSummary.js";
import { classifyOperation, documentKinds } from "../cosmos/operationKind.js";
import type { CosmosRequestPlugin } from "../cosmos/sdkRequestPlugin.js";
import { sdkRequestPlugin, unrecordedOperations } from "../cosmos/sdkRequestPlugin.js";
import { keepAttemptContext, SdkBookkeeping } from "../cosmos/sdkBookkeeping.js";
import type { CosmosOperationPlugin, CosmosPassThroughPlugin } from "../cosmos/operationPlugin.js";
import { operationPlugin, ownContextPlugin } from "../cosmos/operationPlugin.js";
import { SdkVersionGate, standsAsideFor } from "../cosmos/sdkVersion.js";
import { removePackageHeaders } from "../cosmos/headers.js";

/** Data-plane hedging settings of a hedging client: the policy's options less what the client shares. */
export type CrossRegionHedgingOptions = Omit<
  CrossRegionHedgingPolicyOptions,
  "regions" | "enabled" | "onDiagnostics" | "signer" | "requestTimeout"
>;

/** Metadata hedging settings of a hedging client: the policy's options less what the client shares. */
export type MetadataHedgingOptions = Omit<
  MetadataHedgingPolicyOptions,
  "regions" | "enabled" | "onDiagnostics" | "signer" | "requestTimeout"
>;

/** Options of {@link createHedgingHttpClient} and {@link withHedging}. */
export interface HedgingOptions {
  /**
   * Data-plane hedging. Unset or `true`: on with the defaults (500 ms, step
   * 100 ms), since creating a hedging client is the opt-in. An object: on
   * with those settings (for example `{ threshold: "adaptive" }`). `false`:
   * off. `"followAccount"`: on only while the account reports per-partition
   * automatic failover (PPAF), with the .NET defaults
   * (`min(1000, requestTimeout / 2)` ms, step 500 ms).
   */
  crossRegion?: boolean | "followAccount" | CrossRegionHedgingOptions;
  /**
   * Hedging of the Collection and PartitionKeyRange metadata reads. Unset
   * or `true`: on with the defaults (1500 ms, at most 8 hedges in flight);
   * its cost is bounded (one hedge at most, late, and the primary's answer
   * always wins when it has one). An object: on with those settings.
   * `false`: off. `"followAccount"`: on only while the account reports
   * per-partition automatic failover. The
   * `AZURE_COSMOS_METADATA_HEDGING_ENABLED` environment variable overrides
   * this either way.
   */
  metadata?: boolean | "followAccount" | MetadataHedgingOptions;
  /** The preferred-region order. {@link withHedging} defaults it to `connectionPolicy.preferredLocations`. */
  preferredRegions?: readonly string[];
  /** Regions that no request or hedge may go to; changeable later through `regions`. */
  excludedRegions?: readonly string[];
  /** Called with the diagnostics of every request a hedging policy considered. Errors it throws, and rejections of a promise it returns, are logged and ignored. */
  onDiagnostics?: (diagnostics: HedgeDiagnostics) => void;
}

/** Options of {@link createHedgingHttpClient}. */
export interface HedgingHttpClientOptions extends HedgingOptions {
  /** The transport the pipeline runs over. Default: core-rest-pipeline's default HTTP client. */
  httpClient?: HttpClient;
  /** Re-signs each arm of a race, for example {@link masterKeySigner}. */
  signer?: RequestSigner;
  /** The client's per-attempt request timeout, for the PPAF default threshold. Default 60000. */
  requestTimeout?: number;
  /**
   * The endpoint of the one account this client serves (see
   * {@link RegionCacheOptions.accountEndpoint}); requests to any other
   * account pass through unhedged and unchanged. Default: the account of the
   * first database-account response that passes through. {@link withHedging}
   * sets it to the `CosmosClient`'s `endpoint`.
   */
  accountEndpoint?: string;
}

/** An `HttpClient` that runs the hedging policies over a real transport. */
export interface HedgingHttpClient extends HttpClient {
  /** The pipeline holding the hedging policies; add your own with `pipeline.addPolicy(...)`. */
  readonly pipeline: Pipeline;
  /** The region cache every policy of this client shares; change preferred or excluded regions on it at runtime and the next request follows them, primary included. */
  readonly regions: RegionCache;
  /**
   * A snapshot of what data-plane hedging has done: requests, hedges fired
   * and won, budget exhaustion, the request charge of losing arms, and per
   * region the recent latency percentiles, demotion and throttling.
   */
  metrics(): HedgingMetrics;
}

/** Every key of {@link CrossRegionHedgingOptions}, checked against the type by the compiler. */
const crossRegionOptionKeys = optionKeys<CrossRegionHedgingOptions>({
  threshold: true,
  thresholdStep: true,
  enableMultiWriteRegionHedge: true,
  budget: true,
  routing: true,
  hedgesWithoutSessionToken: true,
  drainLosers: true,
});

/** Every key of {@link MetadataHedgingOptions}, checked against the type by the compiler. */
const metadataOptionKeys = optionKeys<MetadataHedgingOptions>({ threshold: true, maxConcurrentHedges: true, drainLosers: true });

const hedgingOptionKeyRecord = {
  crossRegion: true,
  metadata: true,
  preferredRegions: true,
  excludedRegions: true,
  onDiagnostics: true,
} as const satisfies Record<keyof HedgingOptions, true>;

/** Every key of {@link HedgingOptions} (what {@link withHedging} takes), checked against the interface by the compiler. */
export const hedgingOptionKeys = optionKeys<HedgingOptions>(hedgingOptionKeyRecord);

/** Every key of {@link HedgingHttpClientOptions}: those of {@link HedgingOptions} and the client's own. */
const hedgingHttpClientOptionKeys = optionKeys<HedgingHttpClientOptions>({
  ...hedgingOptionKeyRecord,
  httpClient: true,
  signer: true,
  requestTimeout: true,
  accountEndpoint: true,
});

function crossRegionOptions(setting: HedgingOptions["crossRegion"]): CrossRegionHedgingPolicyOptions {
  // Creating a hedging client is the opt-in: unset means on, with the explicit defaults.
  if (setting === undefined) return { enabled: true };
  if (typeof setting === "boolean" || setting === "followAccount") return { enabled: setting };
  if (setting === null || typeof setting !== "object") {
    throw new TypeError(`crossRegion must be a boolean, "followAccount" or an options object; got ${describe(setting)}.`);
  }
  optionsObject("crossRegion", setting, crossRegionOptionKeys);
  return { ...setting, enabled: true };
}

function metadataOptions(setting: HedgingOptions["metadata"]): MetadataHedgingPolicyOptions {
  if (setting === undefined) return { enabled: true };
  if (typeof setting === "boolean") return { enabled: setting };
  // The policy left without `enabled` follows the account's PPAF state.
  if (setting === "followAccount") return {};
  if (setting === null || typeof setting !== "object") {
    throw new TypeError(`metadata must be a boolean, "followAccount" or an options object; got ${describe(setting)}.`);
  }
  optionsObject("metadata", setting, metadataOptionKeys);
  return { ...setting, enabled: true };
}

/**
 * Creates an `HttpClient` whose every request runs through a core-rest-pipeline
 * `Pipeline` holding the hedging policies, over the real transport. Hand it
 * to a client that takes an `httpClient`. For `@azure/cosmos`'s
 * `CosmosClient` use {@link withHedging}, which also installs the plugins
 * that tell the client each request's `excludedLocations` and the SDK's
 * retries: without them a hedge may go to a region a request excluded (a
 * warning says so). Under an `@azure/cosmos` older than 4.7.0 (named in
 * its requests' user agent) it stands aside: every request passes through
 * as the SDK built it, with one warning.
 */
export function createHedgingHttpClient(options: HedgingHttpClientOptions = {}): HedgingHttpClient {
  return buildHedgingHttpClient(options).client;
}

/**
 * Fails safe on a request that should have come through `withHedging`'s
 * `@azure/cosmos` request plugin and did not (the plugin was dropped from
 * `plugins`, or the SDK runs no request plugins): the SDK's
 * `excludedLocations` of that request are unknown, so no arm may go
 * anywhere but where the SDK sent it.
 * @returns `"known"` when the plugin's list was read (the request may be
 * hedged); otherwise the request is kept from hedging, and `"unreadable"`
 * (already warned about where it was read) or `"missing"` says why.
 */
function hedgeOnlyWithSdkOptions(request: PipelineRequest, controls: RequestHedgingControls): "known" | "unreadable" | "missing" {
  if (controls.sdkOptionsKnown === true) return "known";
  // Nor may routing move it: the region it would move to may be one the SDK was told to avoid.
  setRequestControls(request, { ...controls, hedging: false, sdkOptionsKnown: false });
  // An unreadable list was warned about where it was read; a missing one is warned about here.
  return controls.sdkOptionsKnown === false ? "unreadable" : "missing";
}

/** How a hedging client sends a request through its pipeline. */
interface PipelineRoute {
  /** The pipeline's policies composed over the transport. */
  readonly send: SendRequest;
  /**
   * Whether the arms of a race go from it straight to core-rest-pipeline's
   * own transport: the client made its transport, and its pipeline holds
   * its own policies only (a policy of the user's may need a native abort
   * signal).
   */
  readonly armsReachCoreTransport: boolean;
  /** Whether the pipeline still holds the client's hedging layer, which strips the headers the SDK's plugins add. */
  readonly holdsLayer: boolean;
  /** The pipeline's policies less the hedging layer, over the transport: the way of a client that stands aside (see `SdkVersionGate`). */
  readonly aside: SendRequest;
}

/**
 * The route of a request through the client's pipeline, composed once per
 * order of its policies rather than per request (`Pipeline.sendRequest`
 * builds a closure per policy for every request). Core keeps the ordered
 * list it returns until a policy is added or removed, so a list that is not
 * the same object as last time is the sign to compose again.
 */
function pipelineRoutes(pipeline: Pipeline, transport: HttpClient, ownTransport: boolean): () => PipelineRoute {
  const ours = pipeline.getOrderedPolicies();
  const layer = ours[0];
  let order: readonly PipelinePolicy[] | undefined;
  let route: PipelineRoute | undefined;
  return () => {
    const current = pipeline.getOrderedPolicies();
    if (route === undefined || current !== order) {
      order = current;
      const compose = (policies: readonly PipelinePolicy[]): SendRequest =>
        policies.reduceRight<SendRequest>((next, policy) => (request) => policy.sendRequest(request, next), (request) => transport.sendRequest(request));
      route = {
        send: compose(current),
        aside: compose(current.filter((policy) => policy !== layer)),
        armsReachCoreTransport: ownTransport && current.length === ours.length && current.every((policy, index) => policy === ours[index]),
        holdsLayer: layer !== undefined && current.includes(layer),
      };
    }
    return route;
  };
}

/**
 * The options as read once, the per-policy objects copied too: the policies
 * and the info line must see the same values, and an option given through a
 * getter or a proxy could answer differently when read again.
 */
function snapshotOptions(options: HedgingHttpClientOptions): HedgingHttpClientOptions {
  const copy = readOnce(options, hedgingHttpClientOptionKeys);
  if (typeof copy.crossRegion === "object" && copy.crossRegion !== null) copy.crossRegion = { ...copy.crossRegion };
  if (typeof copy.metadata === "object" && copy.metadata !== null) copy.metadata = { ...copy.metadata };
  return copy;
}

/** The clients {@link buildHedgingHttpClient} made, so that one is never wrapped in another. */
const hedgingClients = new WeakSet<HttpClient>();

/** Whether an `HttpClient` is a hedging client of this package. */
function isHedgingHttpClient(client: unknown): boolean {
  return typeof client === "object" && client !== null && hedgingClients.has(client as HttpClient);
}

/** How a hedging client is wired to the `@azure/cosmos` client it serves (see {@link withHedging}). */
export interface SdkWiring {
  /**
   * Whether an attempt may be plain at all (no plugin of the user's, no
   * header of this package's in the client's `defaultHeaders`), asked on
   * every attempt; unset, none is.
   */
  readonly mayBePlain: (() => boolean) | undefined;
  /**
   * The client's partition-level circuit breaker: `always` with
   * `enablePartitionLevelCircuitBreaker`, `withAccountFailover` with
   * `enablePartitionLevelFailover` (on while the account reports
   * per-partition automatic failover), the SDK's per-attempt timeout of a
   * read while it is on and otherwise (`requestTimeout`); and whether its
   * endpoint discovery is on
   * (`enableEndpointDiscovery`), which acts on some failures with the
   * breaker off too.
   */
  readonly circuitBreaker?:
    | {
        readonly always: boolean;
        readonly withAccountFailover: boolean;
        readonly readTimeoutMs: number;
        readonly requestTimeoutMs: number;
        readonly endpointDiscovery: boolean;
      }
    | undefined;
}

/** A hedging client, and the `@azure/cosmos` plugins that hand it each attempt when it is wired to the SDK. */
export interface BuiltHedgingClient {
  readonly client: HedgingHttpClient;
  /** To append to the `CosmosClient`'s `plugins`, last; empty for a client not wired to the SDK. */
  readonly plugins: ReadonlyArray<CosmosPassThroughPlugin | CosmosOperationPlugin | CosmosRequestPlugin>;
}

/**
 * Builds the hedging client. With `sdk`, it also builds the `@azure/cosmos`
 * plugins that hand it each attempt with the SDK's options; every request
 * is then expected to come through them, and one that does not is sent
 * unhedged.
 * @param coreTransport - core-rest-pipeline's transport to run over when no
 *   `httpClient` is given (default: a new one); the client treats it as its
 *   own. For tests, which script it.
 */
export function buildHedgingHttpClient(given: HedgingHttpClientOptions, sdk?: SdkWiring, coreTransport?: HttpClient): BuiltHedgingClient {
  const sdkPluginInstalled = sdk !== undefined;
  const options = snapshotOptions(optionsObject("createHedgingHttpClient options", given, hedgingHttpClientOptionKeys));
  optionalFunction("onDiagnostics", options.onDiagnostics);
  if (options.httpClient !== undefined && typeof options.httpClient?.sendRequest !== "function") {
    throw new TypeError(`httpClient must have a sendRequest function; got ${describe(options.httpClient)}.`);
  }
  if (isHedgingHttpClient(options.httpClient)) {
    // Every arm of the outer client would be raced again by the inner one.
    throw new TypeError("httpClient is already a hedging client (withHedging or createHedgingHttpClient applied twice?); pass its own transport, or use it as it is.");
  }
  const regions = new RegionCache({
    ...(options.preferredRegions !== undefined ? { preferredRegions: regionNameList("preferredRegions", options.preferredRegions) } : {}),
    ...(options.excludedRegions !== undefined ? { excludedRegions: regionNameList("excludedRegions", options.excludedRegions) } : {}),
    ...(options.accountEndpoint !== undefined ? { accountEndpoint: options.accountEndpoint } : {}),
  } satisfies RegionCacheOptions);
  const shared = {
    regions,
    ...(options.requestTimeout !== undefined ? { requestTimeout: options.requestTimeout } : {}),
    ...(options.signer !== undefined ? { signer: options.signer } : {}),
    ...(options.onDiagnostics !== undefined ? { onDiagnostics: options.onDiagnostics } : {}),
  };
  loadOpenTelemetry();
  const breaker = sdk?.circuitBreaker;
  // Learned from the SDK's request contexts by the request plugin; told what a hedge hid from the SDK's endpoint discovery
  // and breaker (which counts only with endpoint discovery on: the SDK's retry policies return before it otherwise).
  const bookkeeping = breaker?.endpointDiscovery === true ? new SdkBookkeeping() : undefined;
  const breakerActive = (): boolean => breaker !== undefined && (breaker.always || (breaker.withAccountFailover && regions.topology?.perPartitionFailover === true));
  const crossRegion = crossRegionHedging(
    { ...crossRegionOptions(options.crossRegion), ...shared },
    breaker === undefined
      ? undefined
      : {
          active: breakerActive,
          readTimeoutMs: breaker.readTimeoutMs,
          requestTimeoutMs: breaker.requestTimeoutMs,
          endpointDiscovery: breaker.endpointDiscovery,
          bookkeeping,
        },
  );
  const metadata = metadataHedging({ ...metadataOptions(options.metadata), ...shared }, bookkeeping);
  const pipeline = createEmptyPipeline();
  // One layer: steering, both hedging policies, the detection record and the arms' spans (see hedgingLayer).
  const steering = regionSteering(regions, bookkeeping === undefined ? undefined : (request) => bookkeeping.partitionMovedOff(request));
  const layer = hedgingLayer(regions, steering, [metadata, crossRegion], sdkPluginInstalled);
  pipeline.addPolicy(layer);
  const transport = options.httpClient ?? coreTransport ?? createDefaultHttpClient();
  const sendToTransport: SendRequest = (request) => transport.sendRequest(request);
  const routeOf = pipelineRoutes(pipeline, transport, options.httpClient === undefined);
  logger.info(hedgingClientSummary(options));
  let warnedWithoutSdkOptions = false;
  /** The request's controls with the SDK's options: handed over by the request plugin, or read from its headers. */
  const sdkOptionsOf = (request: PipelineRequest, handed: SdkAttempt | undefined): RequestHedgingControls => {
    if (handed === undefined) return requestControlsOf(request);
    // Any such header came from the caller's own headers, not from the plugin: it names nothing and must not leave.
    request.headers.delete(operationHeaderName);
    if (handed.operation !== undefined) noteHandedAttempt(request, handed.operation);
    return adoptSdkOptions(request, handed.sdkExcluded, handed.sdkRetry);
  };
  // Off means off: with both kinds of hedging off, a plain attempt of an operation nothing was asked of is the SDK's alone.
  const off = options.crossRegion === false && options.metadata === false;
  const gate = new SdkVersionGate();
  let warnedUnwiredCosmos = false;
  const client: HedgingHttpClient = {
    pipeline: hedgingPipeline(pipeline),
    regions,
    sendRequest: (request) => {
      const handed = sdkPluginInstalled ? takeHandedOver(client) : undefined;
      // An attempt handed over was judged by the request plugin already, which hands none over while the gate stands aside.
      if (handed === undefined && standsAsideFor(gate, request)) {
        // An SDK below the supported floor: its request goes out as it built it, without a header of this package's.
        removePackageHeaders(request);
        return routeOf().aside(request);
      }
      if (!sdkPluginInstalled && !warnedUnwiredCosmos && gate.sawCosmos) {
        warnedUnwiredCosmos = true;
        logger.warning(
          "This hedging client serves an @azure/cosmos client without the plugins withHedging installs: the per-request excludedLocations of the SDK are unknown to it, so a hedge may go to a region a request excluded. Hedge a CosmosClient with withHedging(options).",
        );
      }
      // The SDK's request goes where it would have gone without hedging, at once: not behind a hedge holding its socket.
      yieldSocketsTo(request);
      // Off means off: an attempt of an operation left unrecorded, the SDK's retries included, is the SDK's alone. Account
      // and metadata reads still go through the layer (the topology is learned from them, and the environment's switch
      // may turn metadata hedging on), and so does a request the client has come to steer since.
      if (
        off &&
        handed?.unrecorded === true &&
        steering.leavesPlain(undefined) &&
        routeOf().armsReachCoreTransport &&
        documentKinds.has(handed.kind ?? classifyOperation(request))
      ) {
        return sendToTransport(request);
      }
      // Nearly every request of a withHedging client: the SDK's own, plain, to a pipeline of nothing but the layer over
      // core's transport. It goes out as it is, and costs nothing more until a hedge is due (its SDK context included).
      if (handed?.plain === true && !hasScopedControls() && routeOf().armsReachCoreTransport) {
        const sent = layer.sendPlain(request, handed.operation, sendToTransport, handed.kind, handed.endpoint, handed.context);
        if (sent !== undefined) return sent;
      }
      // What a hedge hides of this attempt is told to the client that sent it.
      if (handed?.context !== undefined) keepAttemptContext(request, handed.context);
      if (sdkPluginInstalled && hedgeOnlyWithSdkOptions(request, sdkOptionsOf(request, handed)) === "missing" && !warnedWithoutSdkOptions) {
        warnedWithoutSdkOptions = true;
        logger.warning(
          "A request reached the hedging client without the request plugin withHedging installs on the CosmosClient (were its plugins replaced, or did a plugin after them send the request again?); it is not hedged, so that no hedge can go to a region the SDK was told to exclude.",
        );
      }
      const route = routeOf();
      if (!route.holdsLayer) {
        // With the layer removed (hedging switched off by hand), nothing else would keep these headers off the wire.
        request.headers.delete(operationHeaderName);
        requestControlsOf(request);
      }
      markForCoreTransport(request, route.armsReachCoreTransport);
      return route.send(request);
    },
    metrics: () => crossRegion.metrics(),
  };
  hedgingClients.add(client);
  if (sdk === undefined) return { client, plugins: [] };
  const { mayBePlain } = sdk;
  const unrecorded = off && mayBePlain !== undefined ? unrecordedOperations(mayBePlain, () => steering.leavesPlain(undefined)) : undefined;
  // The pass-through plugin first, so that the operation plugin gets the SDK's own request context (see ownContextPlugin).
  return { client, plugins: [ownContextPlugin(), operationPlugin(unrecorded, gate), sdkRequestPlugin(client, mayBePlain, unrecorded, bookkeeping, gate)] };
}
