import type { HttpClient } from "@azure/core-rest-pipeline";
import { describe, optionsObject, positiveMilliseconds, readOnce, regionNameList } from "../options.js";
import { masterKeySigner } from "../cosmos/masterKeySigner.js";
import type { HedgingHttpClient, HedgingOptions, SdkWiring } from "./hedgingHttpClient.js";
import { buildHedgingHttpClient, hedgingOptionKeys } from "./hedgingHttpClient.js";
import { namesPackageHeader } from "../cosmos/sdkRequestPlugin.js";
import { logger } from "../log.js";

/**
 * The SDK's own `preferredLocations` without their holes: plain
 * `@azure/cosmos` routes by a sparse list as far as its names go, so a hole
 * is no reason to refuse the client (our own region lists refuse holes).
 * Any other value passes as it is, for {@link regionNameList} to judge.
 */
function sdkListWithoutHoles(list: unknown): unknown {
  return Array.isArray(list) ? Array.prototype.filter.call(list, () => true) : list;
}

function isMasterKey(key: string): boolean {
  // Resource tokens and SAS tokens are not master keys and cannot re-sign.
  return !key.startsWith("type=");
}

/**
 * Write hedging turned off when the SDK is told to write to one region only
 * (`useMultipleWriteLocations: false`), as .NET does: the SDK sends every
 * write to its first write region, and a hedge to another write region of
 * the account would write the document in two.
 */
function singleWriteRegion(crossRegion: HedgingOptions["crossRegion"], useMultipleWriteLocations: boolean | undefined): Pick<HedgingOptions, "crossRegion"> {
  if (useMultipleWriteLocations !== false || typeof crossRegion !== "object" || crossRegion === null) return {};
  if (crossRegion.enableMultiWriteRegionHedge !== true) return {};
  return { crossRegion: { ...crossRegion, enableMultiWriteRegionHedge: false } };
}

/**
 * The longest attempt `@azure/cosmos` (4.10.1) allows a read of documents
 * while partition-level failover or the partition-level circuit breaker is
 * on (`Constants.RequestTimeoutForReadsInMs`), whatever `requestTimeout` says.
 */
const sdkPartitionLevelReadTimeoutMs = 2000;

/** `@azure/cosmos`'s default `connectionPolicy.requestTimeout` (4.10.1). */
const sdkDefaultRequestTimeoutMs = 60_000;

/**
 * Refuses a fixed data-plane threshold, or an adaptive one's floor, that the SDK's own per-attempt
 * timeout would always cut short: the SDK aborts the attempt, and its hedge,
 * before the hedge is due.
 */
function checkThresholdAgainstSdkTimeout(crossRegion: HedgingOptions["crossRegion"], connectionPolicy: HedgeableCosmosClientOptions["connectionPolicy"], requestTimeout: number | undefined): void {
  if (typeof crossRegion !== "object" || crossRegion === null) return;
  // An adaptive threshold never goes below its floor: a floor the SDK's timeout always cuts short is refused alike.
  const { threshold } = crossRegion;
  const floor = typeof threshold === "object" && threshold !== null ? (threshold as { floor?: unknown }).floor : undefined;
  const [option, value] = typeof threshold === "number" ? ["crossRegion.threshold", threshold] : ["crossRegion.threshold.floor", floor];
  if (typeof value !== "number") return;
  const partitionLevel =
    connectionPolicy?.enablePartitionLevelCircuitBreaker === true
      ? "connectionPolicy.enablePartitionLevelCircuitBreaker"
      : connectionPolicy?.enablePartitionLevelFailover === true
        ? "connectionPolicy.enablePartitionLevelFailover"
        : undefined;
  // Past requestTimeout alone, the policy's own check refuses it.
  if (partitionLevel === undefined) return;
  const timeout = Math.min(requestTimeout ?? Number.POSITIVE_INFINITY, sdkPartitionLevelReadTimeoutMs);
  if (value >= timeout) {
    throw new RangeError(`${option} must be below ${timeout} ms, the per-attempt timeout @azure/cosmos applies to reads with ${partitionLevel} on; got ${describe(value)}.`);
  }
}

/**
 * The SDK's partition-level circuit breaker as the client's options may turn
 * it on (see `SdkBreakerWatch`): with `enablePartitionLevelCircuitBreaker`,
 * or with `enablePartitionLevelFailover` (the SDK's default) once the account
 * reports per-partition failover; and its endpoint discovery, which acts on
 * a region's failures whether the breaker is on or not.
 */
function sdkCircuitBreaker(
  connectionPolicy: HedgeableCosmosClientOptions["connectionPolicy"],
  requestTimeout: number | undefined,
): SdkWiring["circuitBreaker"] {
  const always = connectionPolicy?.enablePartitionLevelCircuitBreaker === true;
  // On by default in @azure/cosmos 4.10.1 (defaultConnectionPolicy): unset, the breaker runs once the account reports PPAF.
  const withAccountFailover = connectionPolicy?.enablePartitionLevelFailover !== false;
  const endpointDiscovery = connectionPolicy?.enableEndpointDiscovery !== false;
  if (!always && !withAccountFailover && !endpointDiscovery) return undefined;
  return {
    always,
    withAccountFailover,
    readTimeoutMs: Math.min(requestTimeout ?? Number.POSITIVE_INFINITY, sdkPartitionLevelReadTimeoutMs),
    requestTimeoutMs: requestTimeout ?? sdkDefaultRequestTimeoutMs,
    endpointDiscovery,
  };
}

/**
 * The part of `@azure/cosmos`'s `CosmosClientOptions` that {@link withHedging}
 * reads. Declared here rather than imported, so that the package's types
 * never need `@azure/cosmos` installed; every `CosmosClientOptions` is one.
 */
export interface HedgeableCosmosClientOptions {
  /** The account endpoint. */
  endpoint?: string;
  /** The master key (re-signs every hedge), or a resource token (does not). */
  key?: string;
  /** The transport to hedge over; default core-rest-pipeline's. */
  httpClient?: HttpClient;
  /**
   * The preferred regions (the hedge order), the per-attempt timeout,
   * whether the SDK may write to several regions (with
   * `useMultipleWriteLocations: false` no write is hedged), and whether it
   * discovers the account's regions: with `enableEndpointDiscovery: false`
   * it never reads them, so nothing is hedged, and a warning says so.
   */
  connectionPolicy?: {
    preferredLocations?: readonly string[];
    requestTimeout?: number;
    useMultipleWriteLocations?: boolean;
    enableEndpointDiscovery?: boolean;
    /** With it, the SDK cuts each read's attempt at 2000 ms, so a fixed threshold must sit below that. */
    enablePartitionLevelCircuitBreaker?: boolean;
    /** With it, the SDK cuts each read's attempt at 2000 ms once the account reports per-partition failover. */
    enablePartitionLevelFailover?: boolean;
  };
}

/**
 * Returns new `CosmosClientOptions` whose `httpClient` hedges requests across
 * regions; the input is not changed. Pass the result to `new CosmosClient(...)`.
 * Calling it is the opt-in: without hedging options, reads are hedged with
 * the explicit defaults (500 ms, step 100 ms) and the metadata reads after
 * 1500 ms; `"followAccount"` hedges only while the account reports
 * per-partition automatic failover, as the .NET SDK does. It wraps your own
 * `httpClient` when you set one, takes the preferred
 * regions from `connectionPolicy.preferredLocations` unless `preferredRegions`
 * is given, and derives the PPAF default threshold from
 * `connectionPolicy.requestTimeout`, below which the metadata hedging
 * threshold must also sit. With a master `key`, every hedge is re-signed
 * with a fresh date. Its `httpClient` is a {@link HedgingHttpClient}: keep
 * the options to steer regions at runtime through `httpClient.regions`.
 *
 * @example
 * ```ts
 * const client = new CosmosClient(
 *   withHedging({ endpoint, key, connectionPolicy: { preferredLocations: ["West US", "East US"] } },
 *               { crossRegion: { threshold: 100 }, metadata: { threshold: 1000 } }),
 * );
 * ```
 */
export function withHedging<T extends HedgeableCosmosClientOptions>(
  cosmosClientOptions: T,
  hedgingOptions: HedgingOptions = {},
): T & { httpClient: HedgingHttpClient } {
  if (cosmosClientOptions === null || typeof cosmosClientOptions !== "object") {
    throw new TypeError(`cosmosClientOptions must be an object; got ${describe(cosmosClientOptions)}.`);
  }
  // Read once: the checks below and the client must see the same values (see snapshotOptions).
  const hedging = readOnce(optionsObject("hedgingOptions", hedgingOptions, hedgingOptionKeys), hedgingOptionKeys);
  if (typeof hedging.crossRegion === "object" && hedging.crossRegion !== null) hedging.crossRegion = { ...hedging.crossRegion };
  const { connectionPolicy, key, httpClient, endpoint } = cosmosClientOptions;
  if (connectionPolicy?.enableEndpointDiscovery === false) {
    // Hedging learns the regions from the database-account reads the SDK makes only while it discovers endpoints.
    logger.warning(
      "connectionPolicy.enableEndpointDiscovery is false: @azure/cosmos never reads the account's regions, so this client hedges nothing.",
    );
  }
  // Checked here, so that an error names the SDK option the caller wrote rather than the hedging option it feeds.
  const sdkOrder =
    connectionPolicy?.preferredLocations === undefined ? undefined : regionNameList("connectionPolicy.preferredLocations", sdkListWithoutHoles(connectionPolicy.preferredLocations));
  const requestTimeout =
    connectionPolicy?.requestTimeout === undefined ? undefined : positiveMilliseconds("connectionPolicy.requestTimeout", connectionPolicy.requestTimeout);
  checkThresholdAgainstSdkTimeout(hedging.crossRegion, connectionPolicy, requestTimeout);
  // The cache starts from the order the SDK routes by; a different hedging order is a change the SDK does not know of.
  const { plugins = [], defaultHeaders } = cosmosClientOptions as { plugins?: readonly unknown[]; defaultHeaders?: unknown };
  // A plugin of the user's, or a header of this package's in every request (the SDK reads the defaultHeaders object on
  // every request, so one added later counts), may put something on a request for the hedging client to read: such a
  // client reads every request's headers.
  const mayBePlain = plugins.length === 0 ? () => !namesPackageHeader(defaultHeaders) : undefined;
  const { client: hedgingClient, plugins: sdkPlugins } = buildHedgingHttpClient({
    ...hedging,
    ...singleWriteRegion(hedging.crossRegion, connectionPolicy?.useMultipleWriteLocations),
    ...(sdkOrder !== undefined ? { preferredRegions: sdkOrder } : { preferredRegions: [] }),
    ...(httpClient !== undefined ? { httpClient } : {}),
    ...(requestTimeout !== undefined ? { requestTimeout } : {}),
    ...(typeof key === "string" && isMasterKey(key) ? { signer: masterKeySigner(key) } : {}),
    ...(typeof endpoint === "string" ? { accountEndpoint: endpoint } : {}),
  }, { mayBePlain, circuitBreaker: sdkCircuitBreaker(connectionPolicy, requestTimeout) });
  if (hedging.preferredRegions !== undefined) hedgingClient.regions.setPreferredRegions(hedging.preferredRegions);
  // Last, so that nothing of the user's runs between the request plugin and the hedging client (see sdkRequestPlugin).
  return { ...cosmosClientOptions, httpClient: hedgingClient, plugins: [...plugins, ...sdkPlugins] };
}
