import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionAccess, RegionEndpoint } from "../topology/regionCache.js";
import type { RegionCache } from "../topology/regionCache.js";
import { regionCacheOption } from "../topology/regionCache.js";
import { sameRegion } from "../topology/regionNames.js";
import { describe, optionKeys, optionsObject } from "../options.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { documentReadKinds, documentWriteKinds } from "../cosmos/operationKind.js";
import { cloneRequestFor, retarget } from "../race/cloneRequest.js";
import { sendInstead } from "../request/requestState.js";
import { operationOfAttempt } from "../diagnostics/dispatchRecording.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { notAmongEndpoints, sameScheme } from "../planning/targets.js";
import type { RequestHedgingControls, RequestRouting, RerouteReason } from "../request/requestModel.js";
import { setRequestControls } from "../request/requestControls.js";
import { policyLogger } from "../log.js";
import type { RequestStep } from "./requestHandler.js";
import { policyOver } from "./requestHandler.js";

/** The name of the {@link excludedRegionsPolicy}. */
export const excludedRegionsPolicyName = "excludedRegionsPolicy";

const logger = policyLogger(excludedRegionsPolicyName);

/** Options of the {@link excludedRegionsPolicy}. */
export interface ExcludedRegionsPolicyOptions {
  /**
   * The account's regions, shared with the client's hedging policies: its
   * `excludedRegions` are the client-level exclusions and its preferred
   * order the routing order, both changeable at runtime. Default: a new
   * {@link RegionCache} that learns the topology from the database-account
   * responses passing through this policy.
   */
  regions?: RegionCache;
}

/** Every key of {@link ExcludedRegionsPolicyOptions}, checked against the interface by the compiler. */
const excludedRegionsOptionKeys = optionKeys<ExcludedRegionsPolicyOptions>({ regions: true });

/** Where a request goes, and what to record about it. */
interface Route {
  readonly target?: RegionEndpoint;
  readonly routing?: RequestRouting;
}

const stay: Route = Object.freeze({});

/** What the steering did with an operation's latest request it saw. */
interface Walk {
  /** The region the SDK addressed. */
  addressed: string;
  /** How many of the SDK's requests of the operation had gone out before it. */
  before: number;
  /** Why an earlier request of the operation was re-pointed; none while none was. */
  reason: RerouteReason | undefined;
}

/**
 * What this policy steers: document operations, and the metadata reads that
 * the metadata hedging policy races (their later pages follow the feed's pin).
 */
const steeredKinds: ReadonlySet<OperationKind> = new Set<OperationKind>([
  ...documentReadKinds,
  ...documentWriteKinds,
  "collectionRead",
  "partitionKeyRangeReadFeed",
  "partitionKeyRangeReadFeedContinuation",
]);

function regionList(regions: readonly RegionEndpoint[]): string {
  return regions.map((region) => JSON.stringify(region.name)).join(", ");
}

/**
 * Steers Cosmos DB document requests, and the Collection and
 * PartitionKeyRange reads, between regions, ahead of the hedging policies,
 * without recreating the client:
 *
 * - Excluded regions, client-level (the `RegionCache`'s) and per request:
 *   a request the SDK sent to an excluded region is re-pointed at the first
 *   applicable region (reads among the read regions, writes among the write
 *   regions). When the exclusions leave no region, the request goes where
 *   the SDK sent it and the diagnostics say so: exclusions alone never fail
 *   a request. A write on a single-write account therefore stays put.
 * - A region chosen for the request (`hedgingRequestOptions({ region })`):
 *   the request is re-pointed there and not hedged. A write may only name a
 *   write region, and a read a read region; any other region fails the
 *   request before it is sent.
 * - A preferred order changed at runtime (`RegionCache.setPreferredRegions`):
 *   reads that the SDK sent to its own first choice are re-pointed at the
 *   first applicable region of the new order. Reads the SDK sent elsewhere are
 *   its failover or retries, and are left alone.
 *
 * Within one `@azure/cosmos` operation (with `withHedging`, whose plugin
 * names it), once a request was re-pointed, the SDK's retries walk the
 * applicable regions as its own `excludedLocations` would make them: a retry
 * in place goes where the last request went, and a move goes to the next
 * applicable region after it, round to the first.
 *
 * The hedging policies keep every hedge away from the excluded regions.
 * Every request loses its control headers here, so none reach the service.
 */
export function excludedRegionsPolicy(options: ExcludedRegionsPolicyOptions = {}): PipelinePolicy {
  optionsObject("excludedRegionsPolicy options", options, excludedRegionsOptionKeys);
  const regions = regionCacheOption(options.regions);
  return policyOver(excludedRegionsPolicyName, regions, regionSteering(regions));
}

/**
 * The steering of an {@link excludedRegionsPolicy}, for a layer that reads
 * each request's controls and classifies it itself: it re-points the
 * request where the exclusions, a pinned region or a runtime order send it,
 * and records why. It throws, before anything is sent, for a pinned region
 * the request may not go to.
 * @param partitionMovedOff - the endpoints `@azure/cosmos`'s partition-level
 *   circuit breaker moved a request's partition off (see
 *   `SdkBookkeeping.partitionMovedOff`), which no request is re-pointed to:
 *   the SDK would charge their failures to the region it addressed.
 */
export function regionSteering(
  regions: RegionCache,
  partitionMovedOff?: (request: PipelineRequest) => readonly string[],
): RequestStep & Required<Pick<RequestStep, "leavesPlain">> {
  const pinnedRoute = (
    request: PipelineRequest,
    access: RegionAccess,
    name: string,
    current: RegionEndpoint | undefined,
    controls: RequestHedgingControls,
  ): Route => {
    const target = regions.regionNamed(name, access);
    if (target === undefined) {
      const topology = regions.topology;
      const known =
        topology === undefined
          ? "the account's regions are not known yet"
          : `its ${access} regions are ${regionList(access === "read" ? topology.readRegions : topology.writeRegions)}`;
      throw new RangeError(`Cannot send this ${access} to region ${describe(name)}: it is not a ${access} region of the account; ${known}.`);
    }
    if (!sameScheme(request.url, target)) {
      throw new RangeError(`Cannot send this request to region ${describe(name)}: its endpoint has another scheme than the request.`);
    }
    if (regions.isExcluded(target, controls.excludedRegions)) {
      const by = regions.isExcluded(target) ? `the client's excludedRegions (${regions.excludedRegions.map((region) => JSON.stringify(region)).join(", ")})` : "this request's excluded regions";
      throw new RangeError(`Cannot send this ${access} to region ${describe(name)}: ${by} exclude it.`);
    }
    if (sameRegion(current, target)) return stay;
    return { target, routing: { ...(current !== undefined ? { sdkRegion: current.name } : {}), rerouteReason: "pinnedRegion" } };
  };

  /** The read region `@azure/cosmos` picks on its own: the first of its (initial) preferred regions that the account has. */
  const sdkFirstReadRegion = (): RegionEndpoint | undefined => {
    for (const name of regions.initialPreferredRegions) {
      const region = regions.regionNamed(name, "read");
      if (region !== undefined) return region;
    }
    return regions.topology?.readRegions[0];
  };

  /** The regions a request may be re-pointed to: applicable, on its scheme, and not one the SDK's breaker moved its partition off. */
  const candidates = (request: PipelineRequest, access: RegionAccess, controls: RequestHedgingControls): RegionEndpoint[] => {
    const stillServed = notAmongEndpoints(regions, partitionMovedOff?.(request));
    return regions.applicableRegions(access, controls.excludedRegions).filter((region) => sameScheme(request.url, region) && (stillServed?.(region) ?? true));
  };

  /** Where the exclusions, or a runtime order, send a request the SDK addressed to `current`, as if it were the operation's first. */
  const freshRoute = (request: PipelineRequest, access: RegionAccess, controls: RequestHedgingControls, current: RegionEndpoint): Route => {
    if (regions.isExcluded(current, controls.excludedRegions)) {
      const target = candidates(request, access, controls)[0];
      if (target === undefined) return { routing: { exclusionsIgnored: true } };
      return { target, routing: { sdkRegion: current.name, rerouteReason: "excludedRegion" } };
    }
    // A runtime order moves only the SDK's first attempt: a retry went where it went because the SDK moved it there.
    if (access === "read" && regions.preferredRegionsChangedAtRuntime && controls.sdkRetry !== true && sameRegion(current, sdkFirstReadRegion())) {
      const target = candidates(request, access, controls)[0];
      if (target === undefined || sameRegion(current, target)) return stay;
      return { target, routing: { sdkRegion: current.name, rerouteReason: "preferredRegions" } };
    }
    return stay;
  };

  const toward = (current: RegionEndpoint, target: RegionEndpoint | undefined, reason: RerouteReason): Route =>
    target === undefined || sameRegion(current, target) ? stay : { target, routing: { sdkRegion: current.name, rerouteReason: reason } };

  /**
   * The SDK walks its own regions, not knowing where its earlier requests
   * went: after a re-point West US -> East US, its failover "moves" to East
   * US, the region that just failed. So, once an operation has been
   * re-pointed, its requests walk the applicable regions as the SDK's own
   * exclusions would make it walk: a retry in place (the region the SDK
   * addressed last) goes where the last request went, and a move goes to the
   * applicable region after that one, round to the first. Until then the
   * SDK's walk is its own, except into a region now excluded.
   */
  const routeInOperation = (
    request: PipelineRequest,
    access: RegionAccess,
    controls: RequestHedgingControls,
    current: RegionEndpoint,
    operation: OperationDetection,
  ): Route => {
    const walk = walks.get(operation);
    // Where the SDK's last request went, as the detection record saw it go out (re-pointed or not).
    const lastName = operation.lastSdkRegion();
    const last = lastName === undefined ? undefined : regions.regionNamed(lastName, access);
    const route = last === undefined ? freshRoute(request, access, controls, current) : walkOn(request, access, controls, current, operation, walk, last);
    const reason = route.routing?.rerouteReason;
    if (walk === undefined) {
      walks.set(operation, { addressed: current.name, before: operation.sdkRequests, reason });
    } else {
      walk.addressed = current.name;
      walk.before = operation.sdkRequests;
      walk.reason ??= reason;
    }
    if (reason !== undefined) steeredAny = true;
    return route;
  };

  const walkOn = (
    request: PipelineRequest,
    access: RegionAccess,
    controls: RequestHedgingControls,
    current: RegionEndpoint,
    operation: OperationDetection,
    walk: Walk | undefined,
    last: RegionEndpoint,
  ): Route => {
    const excluded = regions.isExcluded(current, controls.excludedRegions);
    if (walk?.reason === undefined && !excluded) return freshRoute(request, access, controls, current);
    const reason = excluded ? "excludedRegion" : (walk?.reason ?? "excludedRegion");
    const applicable = candidates(request, access, controls);
    if (applicable.length === 0) return freshRoute(request, access, controls, current);
    // The region the SDK addressed last: its own record when the steering saw that request, else where it went.
    const addressed = walk !== undefined && walk.before === operation.sdkRequests - 1 ? walk.addressed : last.name;
    const lastAt = applicable.findIndex((region) => sameRegion(region, last));
    if (sameRegion(current, { name: addressed }) && lastAt !== -1) return toward(current, last, reason);
    // Every applicable region tried, the last refusing with a 403 (3 or 1008): the SDK has marked each of them
    // unavailable and falls back to the account's endpoint, past its own exclusions; so do these.
    if (operation.lastStatus === 403 && applicable.every((region) => operation.requested(region.name))) return { routing: { exclusionsIgnored: true } };
    return toward(current, applicable[(lastAt + 1) % applicable.length], reason);
  };

  /** Per operation, so that two accounts, feeds or concurrent calls never share a walk; gone with the operation. */
  const walks = new WeakMap<OperationDetection, Walk>();
  /** Whether any request of this client was re-pointed: until then no request needs its operation's walk looked up. */
  let steeredAny = false;

  const route = (request: PipelineRequest, access: RegionAccess, controls: RequestHedgingControls): Route => {
    const current = regions.regionOf(request.url);
    if (controls.region !== undefined) {
      if (current === undefined && regions.topology !== undefined) {
        // Re-pointing it would send one account's request, signed with its key, to another account's region.
        throw new RangeError(
          `Cannot send this ${access} to region ${describe(controls.region)}: it is addressed to ${describe(new URL(request.url).origin)}, which is not an endpoint of the account this hedging client serves (${describe(regions.accountEndpoint ?? "unknown")}).`,
        );
      }
      return pinnedRoute(request, access, controls.region, current, controls);
    }
    if (current === undefined) return stay;
    // The SDK's own exclusions are unknown (unreadable, or its plugin did not run): any other region may be one of them.
    if (controls.sdkOptionsKnown === false) return stay;
    // A write the SDK's per-partition failover moved to a region that takes no writes otherwise: it chose it on
    // purpose, and its own excludedLocations do not hold it back either.
    if (access === "write" && controls.sdkRetry === true && regions.regionNamed(current.name, "write") === undefined) return stay;
    // A region only the SDK's own excludedLocations exclude, addressed all the same: its partition-level circuit breaker's
    // move ignores them, and it applies none to metadata reads; plain goes there (hostile review of 67689f7: re-pointed,
    // the read went to the region the breaker had moved the partition off, whose failure the SDK then charged to the region
    // it addressed, and moved the partition off that too). This package's own exclusions still re-point.
    if (controls.sdkOnlyExcludedRegions !== undefined && !regions.isExcluded(current) && regions.isExcluded(current, controls.sdkOnlyExcludedRegions)) return stay;
    const operation = operationOfAttempt(request);
    return operation === undefined ? freshRoute(request, access, controls, current) : routeInOperation(request, access, controls, current, operation);
  };

  function steer(request: PipelineRequest, operation: OperationKind, controls: RequestHedgingControls): RequestHedgingControls {
    const { target, routing } = route(request, documentWriteKinds.has(operation) ? "write" : "read", controls);
    if (routing === undefined) return controls;
    const steered = { ...controls, routing };
    if (target !== undefined && !Reflect.set(request, "url", retarget(request.url, target))) {
      // A policy of the caller's froze the request: a re-pointed copy goes in its place, alone, since the race cannot cut a
      // primary it did not make the signal of.
      logger.verbose(`Sending a frozen ${operation} to ${target.name} as a copy, unhedged, instead of ${routing.sdkRegion ?? "the SDK's region"} (${routing.rerouteReason}).`);
      const copy = cloneRequestFor(request, target, request.abortSignal);
      sendInstead(request, copy);
      const alone = { ...steered, hedging: false as const };
      setRequestControls(copy, alone);
      return alone;
    }
    setRequestControls(request, steered);
    if (target !== undefined) {
      logger.verbose(`Sending a ${operation} to ${target.name} instead of ${routing.sdkRegion ?? "the SDK's region"} (${routing.rerouteReason}).`);
    } else if (routing.exclusionsIgnored) {
      logger.verbose(`Every applicable region of a ${operation} is excluded; sending it where the SDK did.`);
    }
    return steered;
  }

  /** Whether nothing of the client's re-points a request of `operation` that carries no exclusions or pin of its own. */
  const leavesPlain = (operation: OperationDetection | undefined): boolean =>
    regions.excludedRegions.length === 0 &&
    !regions.preferredRegionsChangedAtRuntime &&
    // A request of an operation re-pointed earlier, while exclusions were in force, still walks on from there.
    !(steeredAny && operation !== undefined && walks.get(operation)?.reason !== undefined);

  return {
    kinds: steeredKinds,
    leavesPlain,
    apply(request, operation, controls) {
      // Nearly every request: nothing pins, excludes or reorders it, so `route` would leave it where the SDK sent it;
      // not asking spares it a region lookup.
      if (
        controls.region === undefined &&
        (controls.excludedRegions === undefined || controls.excludedRegions.length === 0) &&
        leavesPlain(operationOfAttempt(request))
      ) {
        return controls;
      }
      return steer(request, operation, controls);
    },
  };
}
