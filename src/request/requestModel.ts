/**
 * The vocabulary of one request's hedging choices: what the caller, the SDK
 * and the routing decided for it. Types only, so that the request's state,
 * the diagnostics and the policies can share them without importing one
 * another.
 */

/** Per-request hedging settings: `false` turns hedging off, an object overrides the policy's timing. */
export type RequestHedgingSetting = false | { readonly threshold?: number; readonly thresholdStep?: number };

/**
 * Why the `excludedRegionsPolicy` sent a request somewhere other than where
 * the SDK sent it. A retry of the SDK's re-pointed to walk on from an
 * earlier re-point of its operation carries the reason of that earlier one.
 */
export type RerouteReason = "excludedRegion" | "pinnedRegion" | "preferredRegions";

/** What the routing policy did with a request, for the diagnostics. */
export interface RequestRouting {
  /**
   * The exclusions would have left the request no region at all, so they
   * were not applied to it: it went where the SDK sent it.
   */
  readonly exclusionsIgnored?: boolean;
  /** The region the SDK addressed, when the request was re-pointed at another one. */
  readonly sdkRegion?: string;
  /** Why the request was re-pointed. */
  readonly rerouteReason?: RerouteReason;
}

/** Hedging choices made for one request (see `hedgingRequestOptions`). */
export interface RequestHedgingControls {
  /** Regions this request and its hedges must not go to. */
  readonly excludedRegions?: readonly string[];
  /** The one region this request must go to; it is not hedged. */
  readonly region?: string;
  /** `false`: no hedge for this request; an object: hedge it with these settings. */
  readonly hedging?: RequestHedgingSetting;
  /** Set by the routing policy: what it did with the request. */
  readonly routing?: RequestRouting;
  /**
   * `true` when the request came through the `@azure/cosmos` request plugin
   * that `withHedging` installs: the SDK's own per-request options are known,
   * and its `excludedLocations` are part of {@link RequestHedgingControls.excludedRegions}.
   * `false` when they are unknown to a client that expects them: the plugin
   * ran but its list could not be read, or a `withHedging` client got a
   * request the plugin had not seen; such a request is neither hedged nor
   * re-pointed. Unset when no plugin is expected (policies added by hand).
   */
  readonly sdkOptionsKnown?: boolean;
  /**
   * The regions only the SDK request's own `excludedLocations` exclude, not
   * an exclusion of this package's on the request (`hedgingRequestOptions`
   * hands its regions to the SDK too): where the SDK addresses one of them
   * all the same, it chose to (its partition-level circuit breaker's move
   * ignores them; it applies none to metadata reads), and the request stays
   * where it sent it, as plain's goes.
   */
  readonly sdkOnlyExcludedRegions?: readonly string[];
  /**
   * Set when the `@azure/cosmos` plugin marked the request as one of the
   * SDK's retries: the SDK chose its region on purpose, so runtime routing
   * leaves it there (exclusions and an explicit per-request region still bind).
   */
  readonly sdkRetry?: boolean;
}
