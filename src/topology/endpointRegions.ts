import type { AccountTopology, RegionCache, RegionEndpoint } from "./regionCache.js";

/** How many endpoints {@link EndpointRegions} remembers: a client's SDK resolves a handful. */
const maxRememberedEndpoints = 16;

/**
 * The regions of the endpoints `@azure/cosmos` resolves for its requests
 * (a request context's `endpoint`, from which the SDK builds the URL), as
 * {@link RegionCache.regionOf} finds them from the URL, remembered under
 * the topology in force. The SDK hands the same endpoint strings out again,
 * so a look-up is a hash the string keeps, where matching the URL's prefix
 * compares (and first flattens) a freshly concatenated URL on every request.
 */
export class EndpointRegions {
  private topology: AccountTopology | undefined;
  /** `null` for an endpoint of no region of the account. */
  private readonly known = new Map<string, RegionEndpoint | null>();

  constructor(private readonly regions: RegionCache) {}

  /** The region addressed by a request the SDK built on `endpoint`, or `undefined` for none of the account's. */
  of(endpoint: string): RegionEndpoint | undefined {
    const { topology } = this.regions;
    if (topology !== this.topology) {
      this.known.clear();
      this.topology = topology;
    }
    const known = this.known.get(endpoint);
    if (known !== undefined) return known ?? undefined;
    const region = this.regions.regionOf(endpoint);
    if (this.known.size >= maxRememberedEndpoints) this.known.clear();
    this.known.set(endpoint, region ?? null);
    return region;
  }
}
