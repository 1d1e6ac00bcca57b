import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { collectionLinkOf, nextPageTokenOf, pageTokenOf } from "../cosmos/feedPages.js";
import { orDefault, positiveMilliseconds, wholeNumber } from "../options.js";
import type { RegionEndpoint } from "./regionCache.js";

/** The bounds of a {@link FeedPins} cache when none are given. */
export const feedPinDefaults = {
  /** The most pins kept; the oldest goes first. */
  maxEntries: 1000,
  /** How long a pin lives, in milliseconds: far longer than an SDK takes to drain a feed, short enough that stale pins do not pile up. */
  ttlMs: 5 * 60_000,
} as const;

/** Options of a {@link FeedPins} cache. */
export interface FeedPinsOptions {
  /** The most pins kept; when full, the oldest is evicted. Default 1000. */
  maxEntries?: number;
  /** Milliseconds a pin lives after it is set. Default 300000 (5 minutes). */
  ttlMs?: number;
}

interface Pin {
  readonly region: RegionEndpoint;
  readonly expiresAt: number;
}

/**
 * Which region the later pages of a feed must go to, keyed by collection
 * link and page token. A token is only meaningful to the region that issued
 * it, so every page served pins the next one to its own region, whichever
 * region that was (the SDK's choice, a rerouted one, a hedge's): a token
 * that another region issued earlier is overwritten, and so never steers a
 * later feed. Bounded and expiring, because a feed the SDK abandons leaves
 * its pin behind.
 */
export class FeedPins {
  private readonly pins = new Map<string, Pin>();
  private readonly maxEntries: number;
  private readonly ttlMs: number;

  constructor(options: FeedPinsOptions = {}) {
    this.maxEntries = wholeNumber("maxEntries", orDefault(options.maxEntries, feedPinDefaults.maxEntries), 1);
    this.ttlMs = positiveMilliseconds("ttlMs", orDefault(options.ttlMs, feedPinDefaults.ttlMs));
  }

  /** The pins that have not expired. */
  get size(): number {
    this.dropExpired(performance.now());
    return this.pins.size;
  }

  /** Pins the page that `token` continues, of the feed of `collectionLink`, to `region`; replaces an earlier pin of the same page. */
  pin(collectionLink: string, token: string, region: RegionEndpoint): void {
    const now = performance.now();
    this.dropExpired(now);
    const key = keyOf(collectionLink, token);
    // Deleting first moves a re-pinned page to the newest end, so eviction order stays expiry order.
    this.pins.delete(key);
    this.pins.set(key, { region, expiresAt: now + this.ttlMs });
    for (const oldest of this.pins.keys()) {
      if (this.pins.size <= this.maxEntries) break;
      this.pins.delete(oldest);
    }
  }

  /** The region the page that `token` continues is pinned to, or `undefined` when it is not pinned or the pin expired. */
  regionFor(collectionLink: string, token: string): RegionEndpoint | undefined {
    const key = keyOf(collectionLink, token);
    const pin = this.pins.get(key);
    if (pin === undefined) return undefined;
    if (pin.expiresAt <= performance.now()) {
      this.pins.delete(key);
      return undefined;
    }
    return pin.region;
  }

  /** Pins the page after `response` (when there is one) to the region that served `response`. */
  pinNextPage(request: PipelineRequest, response: PipelineResponse, servedBy: RegionEndpoint): void {
    const next = nextPageTokenOf(request, response);
    if (next !== undefined) this.pin(collectionLinkOf(request.url), next, servedBy);
  }

  /** The region that issued the token a later page carries, while its pin lives. */
  issuerOf(request: PipelineRequest): RegionEndpoint | undefined {
    const token = pageTokenOf(request);
    return token === undefined ? undefined : this.regionFor(collectionLinkOf(request.url), token);
  }

  /** Forgets every pin. */
  clear(): void {
    this.pins.clear();
  }

  private dropExpired(now: number): void {
    // Every pin lives equally long, so insertion order is expiry order: stop at the first live one.
    for (const [key, pin] of this.pins) {
      if (pin.expiresAt > now) break;
      this.pins.delete(key);
    }
  }
}

function keyOf(collectionLink: string, token: string): string {
  return JSON.stringify([collectionLink, token]);
}
