import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionAccess, RegionEndpoint } from "../topology/regionCache.js";
import type { RegionCache } from "../topology/regionCache.js";
import { regionCacheOption } from "../topology/regionCache.js";
import { sameRegion } from "../topology/regionNames.js";
import { describe, optionKeys, optionsObject } from "../options.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { documentReadKinds, documentWriteKinds } from "../cosmos/operationKind.js";
import { cloneRequestFor, retarget } from "../race/cloneRequest.js";
import { sendInstead, stateIfAny } from "../request/requestState.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { sameScheme } from "../planning/targets.js";
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

/** Where one region the SDK addressed in an operation was sent, and why it was re-pointed (none: it stayed). */
interface Translation {
  readonly target: RegionEndpoint;
  readonly reason: RerouteReason | undefined;
}

/** An operation's translations, by the name of the region the SDK addressed. */
type Translations = Map<string, Translation>;

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
 * names it), the SDK's retries walk the applicable regions as its own
 * `excludedLocations` would make them: a retry the SDK moved to a region an
 * earlier attempt was already re-pointed at goes on to the next applicable
 * region not yet used, and a retry in place goes where the first attempt went.
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
 */
export function regionSteering(regions: RegionCache): RequestStep {
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

  const candidates = (request: PipelineRequest, access: RegionAccess, controls: RequestHedgingControls): RegionEndpoint[] =>
    regions.applicableRegions(access, controls.excludedRegions).filter((region) => sameScheme(request.url, region));

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

  const toward = (current: RegionEndpoint, translation: Translation): Route =>
    sameRegion(current, translation.target) || translation.reason === undefined ? stay : { target: translation.target, routing: { sdkRegion: current.name, rerouteReason: translation.reason } };

  /**
   * The SDK walks its own regions, not knowing that an earlier attempt went
   * elsewhere: after a re-point West US -> East US, its failover "moves" to
   * East US, the region that just failed. As the SDK's own exclusions would,
   * a retry in place follows the first attempt, and a move onto a region an
   * earlier attempt used goes to the next applicable region still unused.
   */
  const routeInOperation = (request: PipelineRequest, access: RegionAccess, controls: RequestHedgingControls, current: RegionEndpoint, translations: Translations): Route => {
    const earlier = translations.get(current.name);
    if (earlier !== undefined && !regions.isExcluded(earlier.target, controls.excludedRegions)) return toward(current, earlier);
    const fresh = freshRoute(request, access, controls, current);
    if (fresh.routing?.exclusionsIgnored === true) return fresh;
    const used = (region: RegionEndpoint): Translation | undefined => {
      for (const [from, translation] of translations) if (from !== current.name && sameRegion(translation.target, region)) return translation;
      return undefined;
    };
    let translation: Translation = { target: fresh.target ?? current, reason: fresh.routing?.rerouteReason };
    const collision = used(translation.target);
    if (collision !== undefined) {
      const unused = candidates(request, access, controls).find((region) => used(region) === undefined);
      if (unused !== undefined) translation = { target: unused, reason: translation.reason ?? collision.reason };
    }
    translations.set(current.name, translation);
    return toward(current, translation);
  };

  /** Per operation, so that two accounts, feeds or concurrent calls never share a walk; gone with the operation. */
  const walks = new WeakMap<OperationDetection, Translations>();
  const translationsOf = (request: PipelineRequest): Translations | undefined => {
    const operation = stateIfAny(request)?.operation;
    if (operation === undefined) return undefined;
    let translations = walks.get(operation);
    if (translations === undefined) {
      translations = new Map();
      walks.set(operation, translations);
    }
    return translations;
  };

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
    const translations = translationsOf(request);
    return translations === undefined ? freshRoute(request, access, controls, current) : routeInOperation(request, access, controls, current, translations);
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

  return {
    kinds: steeredKinds,
    apply(request, operation, controls) {
      // Nearly every request: nothing pins, excludes or reorders it, so `route` would leave it where the SDK sent it;
      // not asking spares it a region lookup.
      if (
        controls.region === undefined &&
        (controls.excludedRegions === undefined || controls.excludedRegions.length === 0) &&
        regions.excludedRegions.length === 0 &&
        !regions.preferredRegionsChangedAtRuntime
      ) {
        return controls;
      }
      return steer(request, operation, controls);
    },
  };
}
