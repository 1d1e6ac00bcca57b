import type { RegionAccess, RegionCache, RegionEndpoint } from "../topology/regionCache.js";
import { regionKey, sameRegion } from "../topology/regionNames.js";

/**
 * Whether a request may be re-pointed at a region: only to an endpoint of
 * the request's own scheme. An `https` request sent to `http` would carry
 * its authorization in clear text, and an arm whose scheme changed would
 * keep the caller's connection agent, which serves one scheme only.
 */
export function sameScheme(requestUrl: string, region: RegionEndpoint): boolean {
  return hasScheme(region, schemeOf(requestUrl));
}

/** The scheme of a URL with its colon, in lower case; empty without one. */
function schemeOf(url: string): string {
  return url.slice(0, url.indexOf(":") + 1).toLowerCase();
}

function hasScheme(region: RegionEndpoint, scheme: string): boolean {
  if (scheme === "") return false;
  // Endpoints the account reports are already in lower case; only another spelling needs a lowered copy.
  return region.endpoint.startsWith(scheme) || region.endpoint.slice(0, scheme.length).toLowerCase() === scheme;
}

/**
 * The arms of a race: the primary, then every applicable region other than
 * it, in hedge order, on the request's own scheme (see {@link sameScheme}).
 */
export function raceTargets(
  regions: RegionCache,
  primary: RegionEndpoint,
  access: RegionAccess,
  requestUrl: string,
  extraExcluded?: readonly string[],
): RegionEndpoint[] {
  const primaryKey = regionKey(primary);
  const scheme = schemeOf(requestUrl);
  const targets = [primary];
  for (const region of regions.applicableRegions(access, extraExcluded)) {
    if (region !== primary && regionKey(region) !== primaryKey && hasScheme(region, scheme)) targets.push(region);
  }
  return targets;
}

/**
 * Whether a region is none of `endpoints` (the SDK's own endpoint strings,
 * as `SdkBookkeeping.partitionMovedOff` names the regions its circuit
 * breaker moved a request's partition off), found in `regions`; `undefined`
 * when the list is empty, so that a caller skips filtering altogether.
 */
export function notAmongEndpoints(regions: RegionCache, endpoints: readonly string[] | undefined): ((region: RegionEndpoint) => boolean) | undefined {
  if (endpoints === undefined || endpoints.length === 0) return undefined;
  const listed = endpoints.map((endpoint) => regions.regionOf(endpoint));
  return (region) => !listed.some((each) => sameRegion(each, region));
}
