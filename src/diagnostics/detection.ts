import { normalizeRegionName } from "../topology/regionNames.js";
import type { PublishedRecord } from "./diagnostics.js";
import { ObjectSlot } from "../request/objectSlot.js";

/**
 * Why a request of an operation went to a region, as the other Cosmos DB
 * SDKs name it (`RequestedRegionReason` in .NET, Python and Rust):
 * `initial`, the operation's first request; `operationRetry`, the SDK's
 * retry to the same region after a service reply (a 429, a 410, a session
 * 404/1002 retried in place); `transportRetry`, the SDK's retry to the same
 * region after a request that got no reply (a timeout, a reset
 * connection); `hedging`, a hedge this package sent; `regionFailover`, the
 * SDK's retry in another region (after a 503, a 403/3, a timeout);
 * `circuitBreakerProbe`, reserved for parity and not reported by this
 * package: `@azure/cosmos` sends no probe of its own.
 *
 * Non-exhaustive: later versions may add reasons, so a `switch` over it
 * needs a `default` branch.
 */
export type RequestedRegionReason =
  | "initial"
  | "operationRetry"
  | "transportRetry"
  | "hedging"
  | "regionFailover"
  | "circuitBreakerProbe"
  // Keeps the union open, as the other SDKs' enums are, while editors still offer the known values.
  | (string & {});

/** One request of an operation: the region it went to, and why. */
export interface RequestedRegion {
  /** The region's name as the account spells it, for example `"West US"`. */
  readonly region: string;
  /** Why the request went there. */
  readonly reason: RequestedRegionReason;
}

/**
 * What one `@azure/cosmos` operation did across regions, from its start to
 * its end, the SDK's own retries included: the cross-SDK hedging detection
 * contract (.NET `CosmosDiagnostics.HedgingStarted()` / `GetRequestedRegions()`
 * / `GetRespondedRegions()`, Python `is_hedging_started()` /
 * `get_requested_regions()` / `get_responded_regions()`, Rust
 * `hedging_started()` / `requested_regions()` / `responded_regions()`), with
 * the operation's request charge. Read it with {@link getHedgingDetection}
 * from the response or the error of the call, or from
 * {@link collectHedgeDiagnostics} for a feed.
 *
 * The lists are snapshots: each call returns a new frozen array. A drained
 * hedge that answers after the call returned is added when its reply
 * arrives; {@link HedgingDetection.final} says whether anything is still to come.
 */
export interface HedgingDetection {
  /** Whether at least one hedge was sent: `false` when the first request answered before the threshold. */
  hedgingStarted(): boolean;
  /** Every request of the operation, in the order they were sent, repeats included, each with its reason. */
  requestedRegions(): readonly RequestedRegion[];
  /** The regions that returned a service reply (success or error, not a transport failure), in the order the replies arrived, repeats included. */
  respondedRegions(): readonly string[];
  /** Whether `region` is among {@link HedgingDetection.requestedRegions}, compared without case or spaces. */
  requested(region: string): boolean;
  /** Whether `region` is among {@link HedgingDetection.respondedRegions}, compared without case or spaces. */
  responded(region: string): boolean;
  /**
   * The request units of every reply of the operation so far: the SDK's
   * retries, the hedges, and drained losers as their replies arrive. The
   * operation's true cost once {@link HedgingDetection.final} is `true`.
   */
  readonly requestCharge: number;
  /** `true` once the operation has ended and no request of it is still running (a drained loser). */
  readonly final: boolean;
  /** Settles (never rejects) with this record once it is final; at once when it is. */
  readonly settled: Promise<HedgingDetection>;
}

/** One dispatch, with its place in the order of every dispatch of the process (to merge the records of a feed). */
interface Dispatch extends RequestedRegion {
  readonly sequence: number;
}

interface Reply {
  readonly region: string;
  readonly sequence: number;
}

let nextSequence = 0;

const emptyList: readonly never[] = Object.freeze([]);

function includesRegion(names: readonly string[], region: string): boolean {
  const key = normalizeRegionName(region);
  return names.some((name) => normalizeRegionName(name) === key);
}

/**
 * The record of one operation, written by the operation plugin (its start
 * and end) and the dispatch policies (its requests and replies). Mutable
 * here; what callers get are snapshots.
 */
export class OperationDetection implements HedgingDetection {
  // Nearly every operation has one request and one reply: those are kept in fields, and only a second of either makes a
  // list (one element long at first: an empty array's first push reserves room for seventeen).
  private firstDispatchRegion: string | undefined;
  private firstDispatchReason: RequestedRegionReason = "initial";
  private firstDispatchSequence = 0;
  private laterDispatches: Dispatch[] | undefined;
  private firstReplyRegion: string | undefined;
  private firstReplySequence = 0;
  private laterReplies: Reply[] | undefined;
  private hedged = false;
  private charge = 0;
  private running = 0;
  private ended = false;
  private resolveSettled: ((record: HedgingDetection) => void) | undefined;
  private settledPromise: Promise<HedgingDetection> | undefined;
  /** The record of the hedging policy for the operation's last request, when one considered it. */
  lastRecord: PublishedRecord | undefined;
  /**
   * Whether the operation plugin puts {@link OperationDetection.lastRecord}
   * on what the SDK returns or throws, header and all (see `runAs`): an
   * attempt answered alone then leaves its response's headers as they came.
   */
  recordGoesOnOutcome = false;
  /** The id its attempts carry in a header, while it is registered for attempts that cannot be handed over (see `registerOperation`). */
  headerId: string | undefined = undefined;
  /** The status of the service's reply to the SDK's last attempt; `undefined` while it got none (a timeout, a reset). */
  lastStatus: number | undefined = undefined;

  /** How many requests of the SDK's own (not hedges) {@link OperationDetection.lastSdkRegion} has seen go out. */
  sdkRequests = 0;

  /** Whether the service replied to the SDK's last attempt (a response of any status), which decides its next attempt's reason. */
  get lastReplied(): boolean {
    return this.lastStatus !== undefined;
  }

  /** Notes a request sent to `region`; it runs until {@link OperationDetection.requestEnded}. */
  requestSent(region: string | undefined, reason: RequestedRegionReason): void {
    this.running += 1;
    if (region === undefined) return;
    if (reason === "hedging") this.hedged = true;
    else this.sdkRequests += 1;
    const sequence = nextSequence++;
    if (this.firstDispatchRegion === undefined) {
      this.firstDispatchRegion = region;
      this.firstDispatchReason = reason;
      this.firstDispatchSequence = sequence;
    } else if (this.laterDispatches === undefined) this.laterDispatches = [{ region, reason, sequence }];
    else this.laterDispatches.push({ region, reason, sequence });
  }

  /** Notes the end of a request, with the reply's region and charge when the service replied. */
  requestEnded(region: string | undefined, replied: boolean, requestCharge: number | undefined): void {
    this.running -= 1;
    if (replied && region !== undefined) {
      const sequence = nextSequence++;
      if (this.firstReplyRegion === undefined) {
        this.firstReplyRegion = region;
        this.firstReplySequence = sequence;
      } else if (this.laterReplies === undefined) this.laterReplies = [{ region, sequence }];
      else this.laterReplies.push({ region, sequence });
    }
    if (requestCharge !== undefined) this.charge += requestCharge;
    this.settleIfFinal();
  }

  /** Notes the end of the operation, when the SDK's call settles. */
  operationEnded(): void {
    this.ended = true;
    this.settleIfFinal();
  }

  /** Reopens a record the SDK retries (an operation known only by its attempts). */
  operationReopened(): void {
    this.ended = false;
  }

  /** The region of the latest request the SDK itself sent (not a hedge), to classify its next one. */
  lastSdkRegion(): string | undefined {
    const { laterDispatches = emptyList } = this;
    for (let index = laterDispatches.length - 1; index >= 0; index--) {
      const dispatch = laterDispatches[index] as Dispatch;
      if (dispatch.reason !== "hedging") return dispatch.region;
    }
    return this.firstDispatchReason === "hedging" ? undefined : this.firstDispatchRegion;
  }

  /** Whether the SDK has sent a request of this operation yet. */
  get started(): boolean {
    return this.firstDispatchRegion !== undefined;
  }

  hedgingStarted(): boolean {
    return this.hedged;
  }

  requestedRegions(): readonly RequestedRegion[] {
    const dispatches = this.dispatches();
    return dispatches.length === 0 ? emptyList : Object.freeze(dispatches.map(({ region, reason }) => Object.freeze({ region, reason })));
  }

  respondedRegions(): readonly string[] {
    const replies = this.replies();
    return replies.length === 0 ? emptyList : Object.freeze(replies.map((reply) => reply.region));
  }

  requested(region: string): boolean {
    return includesRegion(this.dispatches().map((dispatch) => dispatch.region), region);
  }

  responded(region: string): boolean {
    return includesRegion(this.respondedRegions(), region);
  }

  get requestCharge(): number {
    return this.charge;
  }

  get final(): boolean {
    return this.ended && this.running === 0;
  }

  get settled(): Promise<HedgingDetection> {
    if (this.settledPromise === undefined) {
      // Built on first use only: most callers never wait.
      this.settledPromise = this.final
        ? Promise.resolve(this)
        : new Promise<HedgingDetection>((resolve) => {
            this.resolveSettled = resolve;
          });
    }
    return this.settledPromise;
  }

  /** The raw entries with their sequence numbers, for {@link mergeDetections}. */
  entries(): { readonly dispatches: readonly Dispatch[]; readonly replies: readonly Reply[] } {
    return { dispatches: this.dispatches(), replies: this.replies() };
  }

  /** Every dispatch so far, in order, as a list. */
  private dispatches(): readonly Dispatch[] {
    const region = this.firstDispatchRegion;
    if (region === undefined) return emptyList;
    const first: Dispatch = { region, reason: this.firstDispatchReason, sequence: this.firstDispatchSequence };
    return this.laterDispatches === undefined ? [first] : [first, ...this.laterDispatches];
  }

  /** Every reply so far, in order, as a list. */
  private replies(): readonly Reply[] {
    const region = this.firstReplyRegion;
    if (region === undefined) return emptyList;
    const first: Reply = { region, sequence: this.firstReplySequence };
    return this.laterReplies === undefined ? [first] : [first, ...this.laterReplies];
  }

  private settleIfFinal(): void {
    if (!this.final || this.resolveSettled === undefined) return;
    const resolve = this.resolveSettled;
    this.resolveSettled = undefined;
    resolve(this);
  }
}

/**
 * One record over several operations (the pages, query plan and metadata
 * reads of a feed): their requests and replies in the order they happened,
 * their charges added up. It reads the operations live, as each of them does.
 */
export function mergeDetections(operations: readonly OperationDetection[]): HedgingDetection {
  const merged = <T extends { readonly sequence: number }>(pick: (operation: OperationDetection) => readonly T[]): T[] =>
    operations.flatMap(pick).sort((a, b) => a.sequence - b.sequence);
  const requestedRegions = (): readonly RequestedRegion[] =>
    Object.freeze(merged((operation) => operation.entries().dispatches).map(({ region, reason }) => Object.freeze({ region, reason })));
  const respondedRegions = (): readonly string[] => Object.freeze(merged((operation) => operation.entries().replies).map((reply) => reply.region));
  let settled: Promise<HedgingDetection> | undefined;
  const detection: HedgingDetection = {
    hedgingStarted: () => operations.some((operation) => operation.hedgingStarted()),
    requestedRegions,
    respondedRegions,
    requested: (region) => operations.some((operation) => operation.requested(region)),
    responded: (region) => operations.some((operation) => operation.responded(region)),
    get requestCharge() {
      return operations.reduce((sum, operation) => sum + operation.requestCharge, 0);
    },
    get final() {
      return operations.every((operation) => operation.final);
    },
    get settled() {
      settled ??= Promise.all(operations.map((operation) => operation.settled)).then(() => detection);
      return settled;
    },
  };
  return Object.freeze(detection);
}

/** The records of operations, on what the SDK hands back: its response (and that response's `headers`), or its error. */
const attached = new ObjectSlot<OperationDetection>("cosmos-hedging operation");

/**
 * Attaches an operation's record to the response or error the SDK returns
 * for it, and to its `headers` object: `@azure/cosmos` hands the headers on
 * to what the caller gets (an `ItemResponse`, a feed page), and replaces an
 * error's headers on the way out of some calls (a failed query), so both.
 */
export function attachDetection(target: unknown, detection: OperationDetection): void {
  if (typeof target !== "object" || target === null) return;
  attached.set(target, detection);
  const headers = (target as { headers?: unknown }).headers;
  if (typeof headers === "object" && headers !== null) attached.set(headers, detection);
}

/** The operation record attached to `source` or to its `headers`, if any. */
export function detectionOf(source: unknown): OperationDetection | undefined {
  if (typeof source !== "object" || source === null) return undefined;
  const direct = attached.get(source);
  if (direct !== undefined) return direct;
  const headers = (source as { headers?: unknown }).headers;
  return typeof headers === "object" && headers !== null ? attached.get(headers) : undefined;
}

/**
 * The {@link HedgingDetection} of an `@azure/cosmos` operation, read from
 * what the call gave you: its response (an `ItemResponse`, `ResourceResponse`,
 * the object an iterator's `fetchNext()` resolves to, or their `headers`)
 * or the error it threw. The record covers the whole operation, every
 * retry of the SDK's and every hedge. A feed's `fetchAll()` merges its pages
 * into a new object; for it use {@link collectHedgeDiagnostics}, whose
 * `detection` covers every operation of the block.
 * @returns the record, or `undefined` when the value did not come from a
 * `CosmosClient` made with {@link withHedging}.
 *
 * @example
 * ```ts
 * const response = await container.item("id", "pk").read();
 * const detection = getHedgingDetection(response);
 * if (detection?.hedgingStarted()) console.log(detection.requestedRegions(), detection.respondedRegions());
 * ```
 */
export function getHedgingDetection(responseOrError: unknown): HedgingDetection | undefined {
  return detectionOf(responseOrError);
}
