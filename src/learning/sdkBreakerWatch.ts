import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { ArmResult } from "../cosmos/statusTables.js";
import { SubStatus, subStatusOf } from "../cosmos/statusTables.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import type { SdkAttemptFacts, SdkPartitionAttempt } from "../cosmos/sdkBookkeeping.js";

/**
 * How long a region's requests go unhedged after a failure of its that the
 * SDK's circuit breaker did not see, or saw while they did: `@azure/cosmos`
 * 4.10.1 forgets a partition's failure count after a minute without one
 * (`Constants.ConsecutiveFailureCountResetIntervalInMS`), so a minute keeps
 * every failure of a region that fails less often than that countable, as
 * it is through plain `@azure/cosmos`.
 */
export const sdkBreakerDeferralMs = 60_000;

/** What the SDK's partition-level circuit breaker is, as far as hedging must know it. */
export interface SdkBreakerSettings {
  /**
   * Whether the breaker counts failures now: the client's
   * `enablePartitionLevelCircuitBreaker`, or its
   * `enablePartitionLevelFailover` while the account reports per-partition
   * automatic failover. Asked when a failure may have been hidden.
   */
  readonly active: () => boolean;
  /** The SDK's per-attempt timeout of a read while the breaker is on: an attempt that runs this long is a failure to it. */
  readonly readTimeoutMs: number;
  /**
   * The SDK's per-attempt timeout otherwise (the client's `requestTimeout`):
   * an answer later than that was never seen, the SDK having cut the
   * attempt first. Default: none.
   */
  readonly requestTimeoutMs?: number | undefined;
  /**
   * Whether the SDK's endpoint discovery is on (`enableEndpointDiscovery`,
   * on by default): breaker or not, it stops sending to a region for
   * minutes after one attempt there ends as {@link endpointDiscoveryMarks}
   * says.
   */
  readonly endpointDiscovery?: boolean | undefined;
  /**
   * The SDK's own bookkeeping, where it can be told (see `SdkBookkeeping`):
   * a hidden failure its breaker counts, and a read's hidden answer its
   * endpoint discovery acts on, are handed to it, as after an answer it
   * saw, rather than the region going unhedged.
   */
  readonly bookkeeping?: SdkBookkeeper | undefined;
  /** Told when a region starts to go unhedged (not when a deferral in force is extended), with its name as given and why. */
  readonly onDeferral?: ((region: string, reason: SdkDeferralReason) => void) | undefined;
  /**
   * Told, once for each place a threshold comes from, when a read's first
   * hedge is due no earlier than {@link SdkBreakerSettings.readTimeoutMs}
   * while the breaker is on: the SDK cuts the read first, so it is never hedged.
   */
  readonly onUnreachableThreshold?: ((thresholdMs: number, source: FixedThresholdSource) => void) | undefined;
}

/** Tells the SDK's own bookkeeping what a hedge hid from it (`SdkBookkeeping`). */
export interface SdkBookkeeper {
  /**
   * Marks `region` unavailable for the reads of the client that sent
   * `attempt` (when known), or returns false at once when it cannot;
   * `unmarked` is called later if the mark turns out to have failed.
   */
  markForReads(region: string, unmarked: () => void, attempt?: SdkAttemptFacts): boolean;
  /**
   * Counts a failure of `attempt` in the SDK's breaker, or returns false at
   * once when it cannot; `uncounted` is called later if that turns out to have failed.
   */
  countFailure(attempt: SdkPartitionAttempt, counted: (outcome: "moved" | "counted" | "failed") => void): boolean;
  /** What the SDK's bookkeeping needs of the attempt sent as `request`, when its context was kept. */
  attemptOf(request: PipelineRequest): SdkAttemptFacts | undefined;
  /** The endpoints the SDK's breaker moved the partition of the attempt sent as `request` off, with the move in force for it. */
  partitionMovedOff(request: PipelineRequest): readonly string[];
}

/** A primary that lost to a hedge and drains, as the watch keeps it. */
interface RunningPrimary {
  readonly sentAt: number;
  readonly sdk: SdkAttemptFacts | undefined;
}

/** What the watch is told of the SDK's attempt whose outcome a hedge hid. */
export interface HiddenAttempt {
  /** The drained primary {@link SdkBreakerWatch.lost} watched, when it was one. */
  readonly primary?: object | undefined;
  /** Whether it read or wrote; default read. */
  readonly kind?: "read" | "write" | undefined;
  /** What the SDK's bookkeeping needs of it, when known. */
  readonly sdk?: SdkAttemptFacts | undefined;
}

/**
 * Why a region's requests go unhedged for a while: a hedge hid a failure of
 * it from the SDK's partition-level circuit breaker, or from its endpoint
 * discovery.
 */
export type SdkDeferralReason = "sdkCircuitBreaker" | "sdkEndpointDiscovery";

/** Where a fixed threshold was set: the client's options, the PPAF default, or the request's own options. */
export type FixedThresholdSource = "options" | "ppafDefault" | "request";

/** Drained primaries watched per region at most (see {@link SdkBreakerWatch.lost}). */
const maxRunningPerRegion = 1024;

/** How many of a region's oldest drained primaries {@link SdkBreakerWatch.deferring} looks at. */
const oldestLooked = 8;

/** 403 sub-statuses the SDK's endpoint discovery retries (WriteForbidden, DatabaseAccountNotFound), counting a failure. */
const countedForbiddenSubStatuses: ReadonlySet<number> = new Set([SubStatus.writeForbidden, SubStatus.databaseAccountNotFound]);

/**
 * Whether the SDK's breaker counts an attempt that ended so against its
 * region, as `@azure/cosmos` 4.10.1's retry utility hands it to a policy
 * that calls `tryPartitionLevelFailover`: a 503 or a 403/3 or 403/1008
 * answer, a request it could not send (`ENOTFOUND`, `REQUEST_SEND_ERROR`),
 * one its timeout cut, or an attempt that ran as long as that timeout (cut
 * there, with or without an answer later). A reset connection, or any
 * other error, is not counted: the SDK's default policy retries it in the
 * same region.
 * @param durationMs - how long the attempt ran.
 * @param timeoutMs - the SDK's timeout of the attempt; default the read timeout of the breaker.
 */
export function breakerCounts(result: ArmResult | undefined, durationMs: number | undefined, settings: SdkBreakerSettings, timeoutMs = settings.readTimeoutMs): boolean {
  if (durationMs !== undefined && durationMs >= timeoutMs) return true;
  if (result === undefined) return false;
  const { response } = result;
  if (response === undefined) return couldNotSend(result) || cutBySdkTimeout(result);
  if (response.status === 503) return true;
  return response.status === 403 && countedForbiddenSubStatuses.has(subStatusOf(response));
}

/**
 * What the SDK's timeout and breaker make of an attempt whose context is
 * known, as `@azure/cosmos` 4.10.1 decides them for it: its breaker counts
 * only an attempt it resolved a partition for (not a query plan, not a
 * metadata read), and cuts at its short read timeout only a read of
 * documents with one; any other attempt waits for `requestTimeout`.
 * Without the context, as the breaker's own reads.
 */
function sdkViewOf(facts: SdkAttemptFacts | undefined, active: boolean, settings: SdkBreakerSettings): { readonly breaker: boolean; readonly timeoutMs: number } {
  const requestTimeoutMs = settings.requestTimeoutMs ?? Number.POSITIVE_INFINITY;
  if (!active) return { breaker: false, timeoutMs: requestTimeoutMs };
  if (facts === undefined) return { breaker: true, timeoutMs: settings.readTimeoutMs };
  const partition = facts.partition?.context;
  if (partition === undefined) return { breaker: false, timeoutMs: requestTimeoutMs };
  const documentRead = partition.resourceType === "docs" && (partition.operationType === "read" || partition.operationType === "query");
  return { breaker: true, timeoutMs: documentRead ? settings.readTimeoutMs : requestTimeoutMs };
}

/**
 * How long `@azure/cosmos` lets one attempt run before it cuts it, while its
 * breaker is on (see `sdkViewOf`): its short read timeout for a read or
 * query of documents it resolved a partition key range for, else its
 * `requestTimeout` (unbounded when not known).
 */
export function sdkTimeoutOf(facts: SdkAttemptFacts | undefined, settings: SdkBreakerSettings): number {
  return sdkViewOf(facts, true, settings).timeoutMs;
}

/** Whether an attempt failed without an answer because it could not be sent: a name that does not resolve, or a request the transport could not send. */
function couldNotSend(result: ArmResult): boolean {
  const code: unknown = typeof result.error === "object" && result.error !== null ? (result.error as { code?: unknown }).code : undefined;
  return code === "ENOTFOUND" || code === "REQUEST_SEND_ERROR";
}

/** Whether an attempt was cut by the SDK's own timeout, which aborts it and counts a `TimeoutError`. */
function cutBySdkTimeout(result: ArmResult): boolean {
  const { error } = result;
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}

/**
 * Whether `@azure/cosmos`'s endpoint discovery stops sending to a region
 * after an attempt there ended so, whatever its circuit breaker: a 403 with
 * sub-status 1008 (DatabaseAccountNotFound) or 3 (WriteForbidden), or a
 * request that could not be sent (`ENOTFOUND`, `REQUEST_SEND_ERROR`). In
 * 4.10.1 its retry utility hands those to `EndpointDiscoveryRetryPolicy`,
 * which marks the region unavailable for reads (or writes) for five minutes.
 */
export function endpointDiscoveryMarks(result: ArmResult | undefined): boolean {
  if (result === undefined) return false;
  const { response } = result;
  return response !== undefined ? marksByAnswer(response) : couldNotSend(result);
}

/** Whether an answer is one {@link endpointDiscoveryMarks} names: a 403/1008 or 403/3. */
function marksByAnswer(response: PipelineResponse): boolean {
  return response.status === 403 && countedForbiddenSubStatuses.has(subStatusOf(response));
}

/**
 * Keeps hedging from hiding a region's failures from `@azure/cosmos`'s
 * partition-level circuit breaker. The breaker moves a partition's requests
 * to the next region after ten failed reads (five writes) of the SDK's own
 * attempts; a hedge that wins hands the SDK a success for the region it
 * addressed, so a region that fails slowly (a 503 after the threshold, or
 * past the SDK's timeout) would never trip it, and every read would keep
 * going there first for as long as it fails. After such a hidden failure,
 * the region's requests go unhedged for {@link sdkBreakerDeferralMs}
 * (longer while it goes on failing), so that the breaker counts what it
 * would count through plain `@azure/cosmos` and moves the partition as it
 * would; once it has, the SDK addresses another region, whose requests are
 * hedged as before. The SDK's endpoint discovery is kept the same way, with
 * the breaker on or off: a hedge that wins over a primary answering 403/1008
 * (a region removed from the account) would keep the SDK from ever marking
 * the region, and every read would pay the threshold and a second request
 * where plain `@azure/cosmos` moves on after one.
 */
export class SdkBreakerWatch {
  /** Until when (`performance.now()`) each region, by normalized name, goes unhedged, and why. */
  private readonly deferrals = new Map<string, { until: number; reason: SdkDeferralReason; writes?: boolean }>();
  /** When each primary that lost to a hedge and still runs (drained) was sent, by its region's normalized name. */
  private readonly running = new Map<string, Map<object, RunningPrimary>>();
  /**
   * Drained primaries the SDK's breaker was told of once they ran as long as
   * its read timeout: out of {@link SdkBreakerWatch.running}, so that the
   * next ones are looked at, and not counted again when they end.
   */
  private readonly countedAtTimeout = new WeakSet<object>();
  /** The places of thresholds already told of as unreachable. */
  private readonly unreachable = new Set<FixedThresholdSource>();

  constructor(readonly settings: SdkBreakerSettings) {}

  /**
   * Whether the requests addressed to `region` go unhedged now: a deferral
   * is in force, or a primary of the region that lost to a hedge has run as
   * long as the SDK's read timeout (a region that does not answer at all
   * would otherwise hide its failure until the drain's own bound cut it).
   */
  deferring(region: string, now = performance.now()): boolean {
    if (this.deferrals.size === 0 && this.running.size === 0) return false;
    const key = normalizeRegionName(region);
    const deferral = this.deferrals.get(key);
    if (deferral !== undefined) {
      if (deferral.until > now) return true;
      this.deferrals.delete(key);
    }
    const running = this.running.get(key);
    if (running === undefined || !this.settings.active()) return false;
    // The oldest losers first (in the order their races were decided): one past the timeout is among them, and a read
    // of a region with many stragglers draining looks at a few, not at all of them.
    let looked = 0;
    for (const [primary, entry] of running) {
      const sdk = sdkViewOf(entry.sdk, true, this.settings);
      if (!sdk.breaker || now - entry.sentAt < sdk.timeoutMs) {
        if (++looked === oldestLooked) break;
        continue;
      }
      // The SDK would have cut it at its timeout and counted a failure: told so, the region's reads stay hedged.
      if (entry.sdk?.partition === undefined || !this.count(region, key, entry.sdk.partition, undefined)) {
        this.defer(region, key, now, "sdkCircuitBreaker");
        return true;
      }
      this.countedAtTimeout.add(primary);
      running.delete(primary);
    }
    if (running.size === 0) this.running.delete(key);
    return false;
  }

  /** Why requests addressed to `region` go unhedged now (see {@link SdkBreakerWatch.deferring}), or `undefined` when they do not. */
  deferral(region: string, now = performance.now()): SdkDeferralReason | undefined {
    return this.deferring(region, now) ? this.deferrals.get(normalizeRegionName(region))?.reason : undefined;
  }

  /**
   * A primary of `region`, sent at `sentAt`, lost to a hedge and drains:
   * running past the SDK's read timeout, it defers the region (see
   * {@link SdkBreakerWatch.deferring}) until {@link SdkBreakerWatch.hidden}
   * is told how it ended. `primary` names it; `sdk` is what the SDK's
   * breaker needs to count a failure of it, when known.
   */
  lost(region: string, primary: object, sentAt: number, sdk?: SdkAttemptFacts): void {
    // Kept with the breaker off too, for the facts: how it ends may be an answer endpoint discovery acts on.
    if (!this.settings.active() && sdk === undefined) return;
    const key = normalizeRegionName(region);
    let running = this.running.get(key);
    if (running === undefined) this.running.set(key, (running = new Map()));
    // Bounded by the drains in flight, which end within their own bound; a cap all the same, as a guard against a drain never told of.
    if (running.size < maxRunningPerRegion) running.set(primary, { sentAt, sdk });
  }

  /**
   * The SDK's attempt to `region` ended as `result` after `durationMs`, and
   * the SDK got a hedge's answer instead: a failure its breaker would have
   * counted, or one its endpoint discovery would have acted on, is told to
   * the SDK where it can be (see {@link SdkBreakerSettings.bookkeeping}), as
   * its own retry policies would have told it: the breaker counts it and
   * moves the partition at the same failure as plain `@azure/cosmos`, while
   * the region's reads stay hedged; endpoint discovery keeps a read's region
   * away for its own window. Where it cannot be, it starts (or extends) the
   * deferral.
   * @returns whether it did either.
   */
  hidden(region: string, result: ArmResult | undefined, durationMs: number | undefined, attempt: HiddenAttempt = {}, now = performance.now()): boolean {
    // Counted when it ran as long as the SDK's timeout: the SDK would not have waited for how it ended.
    if (attempt.primary !== undefined && this.countedAtTimeout.delete(attempt.primary)) return true;
    const running = attempt.primary === undefined ? undefined : this.ended(region, attempt.primary);
    const sdk = attempt.sdk ?? running?.sdk;
    const view = sdkViewOf(sdk, this.settings.active(), this.settings);
    // An answer that came after the SDK's own timeout would have cut the attempt is one it never saw.
    const marks = this.settings.endpointDiscovery === true && (durationMs === undefined || durationMs < view.timeoutMs) && endpointDiscoveryMarks(result);
    const reason: SdkDeferralReason | undefined = view.breaker && breakerCounts(result, durationMs, this.settings, view.timeoutMs) ? "sdkCircuitBreaker" : marks ? "sdkEndpointDiscovery" : undefined;
    if (reason === undefined) return false;
    const key = normalizeRegionName(region);
    const read = attempt.kind !== "write";
    const markForReads = (): boolean => this.settings.bookkeeping?.markForReads(region, () => this.defer(region, key, performance.now(), "sdkEndpointDiscovery"), sdk) === true;
    // The SDK's retry policy counts the failure first and marks the region only when the breaker did not move the partition.
    if (reason === "sdkCircuitBreaker" && sdk?.partition !== undefined && this.count(region, key, sdk.partition, marks && read ? markForReads : undefined)) return true;
    if (reason === "sdkEndpointDiscovery" && read && markForReads()) return true;
    this.defer(region, key, now, reason);
    // A 403/3 (WriteForbidden) makes the SDK avoid the region for writes only: its reads' answers say nothing of it.
    if (reason === "sdkEndpointDiscovery" && result?.response !== undefined && subStatusOf(result.response) === SubStatus.writeForbidden) {
      const deferral = this.deferrals.get(normalizeRegionName(region));
      if (deferral !== undefined) deferral.writes = true;
    }
    return true;
  }

  /**
   * Tells the SDK's breaker of a failure of `sdk`, falling back to deferring
   * `region` if the SDK's call fails; `andThen` runs when the breaker
   * counted it without moving the partition.
   * @returns whether the SDK is being told.
   */
  private count(region: string, key: string, sdk: SdkPartitionAttempt, andThen: (() => void) | undefined): boolean {
    return (
      this.settings.bookkeeping?.countFailure(sdk, (outcome) => {
        if (outcome === "failed") this.defer(region, key, performance.now(), "sdkCircuitBreaker");
        else if (outcome === "counted") andThen?.();
      }) === true
    );
  }

  private defer(region: string, key: string, now: number, reason: SdkDeferralReason): void {
    const deferral = this.deferrals.get(key);
    if (deferral !== undefined && deferral.until > now) {
      deferral.until = now + sdkBreakerDeferralMs;
      // The breaker's counts outlive any answer between its failures: a deferral it shares is ended only by time.
      if (reason === "sdkCircuitBreaker") deferral.reason = reason;
      return;
    }
    this.deferrals.set(key, { until: now + sdkBreakerDeferralMs, reason });
    this.settings.onDeferral?.(region, reason);
  }

  /**
   * The SDK's attempt to `region` was cut by hedging before its answer and
   * before the SDK's own timeout (a loser that may not drain, or a drain
   * cut at a bound shorter than that timeout): how it would have ended is
   * unknown, so it counts as a hidden failure. Without that, a region
   * failing slowly would never trip the breaker where losers are aborted.
   * @returns whether it deferred the region (the breaker is on).
   */
  cut(region: string, primary?: object, now = performance.now()): boolean {
    if (primary !== undefined) this.ended(region, primary);
    if (!this.settings.active()) return false;
    this.defer(region, normalizeRegionName(region), now, "sdkCircuitBreaker");
    return true;
  }

  /** Forgets a drained primary that has ended, and returns what was kept of it. */
  private ended(region: string, primary: object): RunningPrimary | undefined {
    const key = normalizeRegionName(region);
    const running = this.running.get(key);
    const entry = running?.get(primary);
    if (entry !== undefined && running!.delete(primary) && running!.size === 0) this.running.delete(key);
    return entry;
  }

  /**
   * `region` answered `response`. An answer the SDK's endpoint discovery
   * does not act on ends a deferral for it (a read's answer, one begun by a
   * write's 403/3): the region answers again, and
   * the SDK, which never saw the answer a hedge hid, will not mark it, so
   * its requests are hedged again at once rather than going unhedged, and
   * perhaps slow, for the rest of the minute.
   */
  answered(region: string, response: PipelineResponse): void {
    if (this.deferrals.size === 0 || marksByAnswer(response)) return;
    const key = normalizeRegionName(region);
    const deferral = this.deferrals.get(key);
    if (deferral?.reason !== "sdkEndpointDiscovery" || (deferral.writes === true && response.request.method === "GET")) return;
    this.deferrals.delete(key);
  }

  /**
   * An unhedged attempt to `region` ended as `result`, seen by the SDK: a
   * failure extends a deferral in force, so that the breaker keeps counting
   * while the region keeps failing.
   */
  seen(region: string, result: ArmResult, now = performance.now()): void {
    if (this.deferrals.size === 0 || !breakerCounts(result, undefined, this.settings) || !this.deferring(region, now)) return;
    const deferral = this.deferrals.get(normalizeRegionName(region));
    if (deferral !== undefined) deferral.until = now + sdkBreakerDeferralMs;
  }

  /**
   * A read's first hedge is planned `thresholdMs` after it is sent: at or
   * past the SDK's read timeout, while the breaker is on, the SDK cuts the
   * read first. `withHedging` refuses such a threshold in its options when
   * the client's own options turn the breaker on; with the SDK's default
   * `enablePartitionLevelFailover` it comes on only once the account reports
   * per-partition failover, so it is told here, when it is known.
   */
  checkThreshold(thresholdMs: number, source: FixedThresholdSource): void {
    if (thresholdMs < this.settings.readTimeoutMs || this.unreachable.has(source) || !this.settings.active()) return;
    this.unreachable.add(source);
    this.settings.onUnreachableThreshold?.(thresholdMs, source);
  }
}
