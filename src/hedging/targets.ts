import type { RegionAccess, RegionCache, RegionEndpoint } from "../caches/regionCache.js";
import { normalizeRegionName } from "../caches/regionNames.js";

/**
 * The arms of a race: the primary, then every applicable region other than
 * it, in hedge order. A region whose endpoint would downgrade the request's
 * scheme (an `https` request cloned to `http`) is never a target.
 */
export function raceTargets(
  regions: RegionCache,
  primary: RegionEndpoint,
  access: RegionAccess,
  requestUrl: string,
  extraExcluded?: readonly string[],
): RegionEndpoint[] {
  const secure = requestUrl.startsWith("https:");
  const primaryName = normalizeRegionName(primary.name);
  const hedges = regions
    .applicableRegions(access, extraExcluded)
    .filter((region) => normalizeRegionName(region.name) !== primaryName)
    .filter((region) => !secure || region.endpoint.startsWith("https:"));
  return [primary, ...hedges];
}
