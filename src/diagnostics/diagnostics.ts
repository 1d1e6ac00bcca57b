import type { HttpHeaders, PipelineResponse } from "@azure/core-rest-pipeline";
import { CosmosHeaders, hedgeDiagnosticsHeaderName } from "../cosmos/headers.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { HedgeRankingReason } from "../learning/regionRanking.js";
import { ObjectSlot } from "../request/objectSlot.js";
import type { RequestRouting } from "../request/requestModel.js";

export type { HedgeRankingReason } from "../learning/regionRanking.js";

/** Which policy produced a {@link HedgeDiagnostics} record. */
export type HedgePolicyKind = "crossRegion" | "metadata";

/**
 * Why an arm was sent: `primary` is the request the SDK made; `threshold`, a
 * hedge launched when its threshold elapsed; `transientResult`, a hedge
 * launched early because a hedge before it came back transient (the
 * primary's transient answer goes back to the SDK's retry instead).
 */
export type HedgeArmReason = "primary" | "threshold" | "transientResult";

/**
 * How an arm ended: `returned`, its outcome is what the caller got;
 * `lost`, it settled but another outcome was returned; `drained`, it was
 * still running when another outcome was returned and was left to finish in
 * the background, so that its connection goes back to the pool (see
 * {@link HedgeArmDiagnostics.drainEnd}); `aborted`, it was cancelled because
 * the race was decided or the caller aborted, or (a hedge on an agent that
 * bounds its sockets) because a request of the SDK's would have waited for
 * the socket it held, while its race went on.
 */
export type HedgeArmOutcome = "returned" | "lost" | "drained" | "aborted";

/**
 * How a drained loser ended: `settled`, it got its response (or error) on
 * its own; `timeLimit` or `byteLimit`, it was aborted when it reached a
 * bound of `drainLosers`; `callerAborted`, the caller's abort signal fired
 * while it drained.
 */
export type HedgeDrainEnd = "settled" | "timeLimit" | "byteLimit" | "callerAborted";

/**
 * How a hedged request ended: `primaryWon` and `hedgeWon`, an arm produced
 * the answer; `primaryOutcome`, no arm produced an acceptable answer and the
 * primary's outcome was returned; `aborted`, the caller (or the SDK's request
 * timeout) aborted it; `skipped`, hedging was considered and not used (see
 * {@link HedgeDiagnostics.skipReason}).
 */
export type HedgeTerminalState = "primaryWon" | "hedgeWon" | "primaryOutcome" | "aborted" | "skipped";

/**
 * Why hedging was considered and not used, or why a race launched fewer
 * hedges than it could have (`budgetExhausted`).
 */
export type HedgeSkipReason =
  | "disabled"
  | "accountSwitch"
  | "notEligible"
  | "singleRegion"
  | "unknownRegion"
  | "streamBody"
  | "budgetExhausted"
  | "pinnedRegion"
  | "continuationPage"
  | "regionThrottled"
  | "sdkRetry"
  | "sdkCircuitBreaker"
  | "sdkEndpointDiscovery";

/** What the region ranking did with a read. */
export interface HedgeRanking {
  /** Why the read went where it went. */
  reason: HedgeRankingReason;
  /** The region the request addressed when it reached the policy. */
  addressedRegion: string;
}

/** A thrown error of an arm, reduced to what is safe to log. */
export interface HedgeArmError {
  /** The error's `name`, for example `"RestError"`. */
  name: string;
  /** The error's `code` when it has one, for example `"ECONNRESET"`. */
  code?: string;
  /** The error's message, without any credential. */
  message: string;
}

/** One arm of a race: one copy of the request, sent to one region. */
export interface HedgeArmDiagnostics {
  /** The region the arm went to. */
  region: string;
  /** Why the arm was sent. */
  reason: HedgeArmReason;
  /** Milliseconds from the start of the race to the arm's launch. */
  startOffsetMs: number;
  /**
   * Milliseconds from launch until the arm settled or was aborted; for a
   * drained arm, until the race was decided, then (once the drain ends)
   * until the drain ended.
   */
  durationMs?: number;
  /** The HTTP status, when the arm got a response. */
  status?: number;
  /** The `x-ms-substatus`, when the response had one. */
  subStatus?: number;
  /** The error the arm threw, when it got no response. */
  error?: HedgeArmError;
  /** The response's `x-ms-activity-id`. */
  activityId?: string;
  /** The response's `x-ms-request-charge`, in request units. */
  requestCharge?: number;
  /** How the arm ended. */
  outcome: HedgeArmOutcome;
  /**
   * `true` on a hedge sent without the request's `x-ms-session-token`
   * (`hedgesWithoutSessionToken`): its answer may predate the session's own writes.
   */
  sessionTokenOmitted?: boolean;
  /**
   * How a `drained` arm's drain ended; absent until it ends. The record is
   * completed in place when it does (with the arm's status and request
   * charge), after the record was published.
   */
  drainEnd?: HedgeDrainEnd;
}

/** What a hedging policy did for one request. */
export interface HedgeDiagnostics {
  /** The policy that produced the record. */
  policy: HedgePolicyKind;
  /** The operation, as classified from the request. */
  operation: OperationKind;
  /** The threshold in force, in milliseconds. */
  thresholdMs?: number;
  /** The step between later hedges, in milliseconds. */
  thresholdStepMs?: number;
  /**
   * Where the threshold came from: options, the PPAF default, a per-request
   * override, or the adaptive mode: `benefit`, the earliest delay whose
   * hedges cost no more than the share of reads a hedge can rescue plus one
   * point, at least half of them winning;
   * `noBenefit`, no such delay, so a backstop: the primary's largest recent
   * answer plus the hedge region's latency; `adaptive`, the percentile of the healthy
   * baseline, while the hedge region's latency is not known yet;
   * `adaptiveWarmup`, the ceiling while no latency window holds enough
   * samples.
   */
  thresholdSource?: "options" | "ppafDefault" | "request" | "adaptive" | "adaptiveWarmup" | "benefit" | "noBenefit";
  /** The region whose latencies set an adaptive threshold: the primary's for `benefit` and `noBenefit`. */
  thresholdRegion?: string;
  /** The primary arm's region: the region the SDK addressed, unless the region ranking chose another (see `ranking`). */
  primaryRegion?: string;
  /** Set when the region ranking chose the primary or the order of the arms. */
  ranking?: HedgeRanking;
  /**
   * What the excludedRegionsPolicy did before hedging: the region the SDK
   * addressed and why the request was re-pointed, or that exclusions were
   * ignored because they left no region.
   */
  routing?: RequestRouting;
  /** Every arm, in launch order; empty when hedging was skipped. */
  arms: HedgeArmDiagnostics[];
  /** Whether at least one hedge (an arm beyond the primary) was launched. */
  hedgeFired: boolean;
  /** Whether a hedge's outcome was returned. */
  hedgeWon: boolean;
  /** The region whose outcome was returned. */
  winningRegion?: string;
  /** The activity id of the returned response. */
  winningActivityId?: string;
  /** How the request ended. */
  terminalState: HedgeTerminalState;
  /**
   * The request charge of every arm that got a response, losers included.
   * A drained loser's charge is added when its response arrives, after the
   * record was published: the record object (from `onDiagnostics` or
   * {@link getHedgeDiagnostics} on the response) is updated in place, while
   * the response header keeps the value at the time the race was decided.
   * It is the true cost once {@link HedgeDiagnostics.final} is `true`.
   */
  totalRequestCharge: number;
  /**
   * `false` while a drained loser of the race is still running: its charge
   * is not in `totalRequestCharge` yet. The live record turns `true` when
   * the last drain ends; `whenFinal(record)` waits for it.
   */
  final: boolean;
  /**
   * Why hedging was skipped, or why fewer hedges were launched than planned.
   * `notEligible`: the request may not be raced (a write the account or the
   * options do not let hedge), or its race would have to cut a primary it
   * cannot give an abort signal to (a policy of the caller's froze the
   * request). `regionThrottled`: every other region is answering 429 and is not
   * hedged into until its `x-ms-retry-after-ms` has passed. `sdkRetry`:
   * the request is a retry of `@azure/cosmos`'s own (after a 503, a timeout,
   * a 429), sent where the SDK sent it; only the first attempt is hedged, so
   * that an outage costs at most twice the requests of plain `@azure/cosmos`.
   * `sdkCircuitBreaker`: the SDK's partition-level circuit breaker is on, and
   * a hedge that won hid a failure of this region from it that could not be
   * told to the breaker directly (a primary aborted before its answer could
   * show, or an attempt whose request context was not kept): the region's
   * requests go unhedged for a minute after its last such failure, so that
   * the breaker counts them and moves the partition as it would without
   * hedging.
   * `sdkEndpointDiscovery`: a hedge that won hid an answer of this region
   * that the SDK's endpoint discovery acts on, breaker or not (a 403 with
   * sub-status 1008 or 3, a request it could not send), and the SDK could
   * not be told of it directly (a write's answer; a read's is told to the
   * SDK's endpoint discovery): the region's requests go unhedged for a
   * minute, so that the SDK marks it unavailable and sends elsewhere as it
   * would without hedging.
   */
  skipReason?: HedgeSkipReason;
}

/**
 * A record kept as the facts it is built from until someone reads it: a
 * read that never hedged is published with one of these, so that it pays
 * for no record nobody asks for. Reading it builds the record once; every
 * later read gets the same object, as a record built eagerly would be.
 */
export abstract class DeferredRecord {
  private built: HedgeDiagnostics | undefined;

  /** The record, built on first use. */
  get record(): HedgeDiagnostics {
    return (this.built ??= this.build());
  }

  /** The value of the diagnostics header for it: the record's JSON, compact where it can be (see {@link headerValue}). */
  abstract headerValue(): string;

  /** Serializes as the record it stands for, as a built record would (inside an operation's detection record, say). */
  toJSON(): HedgeDiagnostics {
    return this.record;
  }

  protected abstract build(): HedgeDiagnostics;
}

/** A published record, built already or {@link DeferredRecord deferred}. */
export type PublishedRecord = HedgeDiagnostics | DeferredRecord;

/** The record a published one stands for, built now if it was deferred. */
export function recordOf(published: PublishedRecord): HedgeDiagnostics {
  return published instanceof DeferredRecord ? published.record : published;
}

/** The records of responses: every request has one, so a property of the response. */
const attachedToResponses = new ObjectSlot<PublishedRecord>("cosmos-hedging diagnostics");
/**
 * Attaches the live record of a request to the plain `headers` object that
 * `@azure/cosmos` makes of its response (or puts on its error), so that
 * {@link getHedgeDiagnostics} returns the record itself, completed in place
 * when a drained arm ends, rather than the header's snapshot.
 */
export function attachHedgeDiagnosticsToHeaders(headers: object, diagnostics: PublishedRecord): void {
  attachedToResponses.set(headers, diagnostics);
  // A deferred record of an operation's attempt was not written on its response (see publishDeferred), so the SDK's
  // copy of the response headers lacks its header. Headers that take no new property (frozen, or a proxy that
  // refuses) go without it, as they would have taken none from the SDK's copy either: the record is still attached.
  if (diagnostics instanceof DeferredRecord && Object.isExtensible(headers) && (headers as Record<string, unknown>)[hedgeDiagnosticsHeaderName] === undefined) {
    try {
      Reflect.set(headers, hedgeDiagnosticsHeaderName, diagnostics.headerValue());
    } catch {
      // A proxy's trap that throws: the header is only a copy of the record.
    }
  }
}

/** The records of errors, which callers print and inspect, so kept off the error object itself. */
const attachedToErrors = new WeakMap<object, HedgeDiagnostics>();

/** The JSON of a number as `JSON.stringify` writes it. */
function jsonNumber(value: number): string {
  return Number.isFinite(value) ? String(value) : "null";
}

/** The head of a record's JSON, with the fields it depends on. */
interface CachedHead {
  /** A skipped record's head runs to its charge; a race's, to its arms. */
  readonly skipped: boolean;
  readonly policy: HedgeDiagnostics["policy"];
  readonly operation: HedgeDiagnostics["operation"];
  readonly thresholdMs: number | undefined;
  readonly thresholdStepMs: number | undefined;
  readonly thresholdSource: HedgeDiagnostics["thresholdSource"];
  readonly skipReason: HedgeDiagnostics["skipReason"];
  readonly thresholdRegion: string | undefined;
  readonly primaryRegion: string | undefined;
  readonly json: string;
  /** The compact header of the latest skipped record of this kind, with its charge (see {@link headerValue}). */
  skippedHeader?: { readonly charge: number; readonly header: string };
  /** The compact header of the latest race of this kind its primary won alone in its primary region, with that arm's status and charge. */
  lonePrimary?: { readonly status: number | undefined; readonly charge: number | undefined; readonly total: number; readonly header: string };
}

/**
 * The heads of the latest kinds of records, found by comparing fields (a
 * key string would be built and hashed for every request). A client sees a
 * few kinds; records that share every field were built by one code path,
 * so their fields stand in one order.
 */
const recentHeads: CachedHead[] = [];
const maxRecentHeads = 16;
/** The index in {@link recentHeads} of the head a new one replaces once it is full (the oldest). */
let nextEvicted = 0;

/** The fields of a record that its cached head depends on. */
type CachedHeadField =
  | "policy"
  | "operation"
  | "thresholdMs"
  | "thresholdStepMs"
  | "thresholdSource"
  | "skipReason"
  | "thresholdRegion"
  | "primaryRegion";

function cachedHead(skipped: boolean, diagnostics: Pick<HedgeDiagnostics, CachedHeadField>): CachedHead {
  for (const head of recentHeads) {
    if (
      head.skipped === skipped && head.operation === diagnostics.operation && head.primaryRegion === diagnostics.primaryRegion &&
      head.thresholdMs === diagnostics.thresholdMs && head.thresholdSource === diagnostics.thresholdSource && head.policy === diagnostics.policy &&
      head.thresholdStepMs === diagnostics.thresholdStepMs && head.skipReason === diagnostics.skipReason && head.thresholdRegion === diagnostics.thresholdRegion
    ) {
      return head;
    }
  }
  const head: CachedHead = {
    skipped,
    policy: diagnostics.policy,
    operation: diagnostics.operation,
    thresholdMs: diagnostics.thresholdMs,
    thresholdStepMs: diagnostics.thresholdStepMs,
    thresholdSource: diagnostics.thresholdSource,
    skipReason: diagnostics.skipReason,
    thresholdRegion: diagnostics.thresholdRegion,
    primaryRegion: diagnostics.primaryRegion,
    json: skipped ? skippedHeadJson(diagnostics) : raceHeadJson(diagnostics),
  };
  if (recentHeads.length < maxRecentHeads) recentHeads.push(head);
  else {
    recentHeads[nextEvicted] = head;
    nextEvicted = (nextEvicted + 1) % maxRecentHeads;
  }
  return head;
}

/** The JSON of a skipped record without its charge and closing brace. */
function skippedHeadJson(diagnostics: Partial<HedgeDiagnostics>): string {
  const { totalRequestCharge: _charge, final: _final, ...rest } = diagnostics;
  return JSON.stringify(rest).slice(0, -1);
}

/** The JSON of a race record's fields before its arms (all of a head's, which has none), with the comma after them: `{"policy":...,`. */
function raceHeadJson(diagnostics: Partial<HedgeDiagnostics>): string {
  const fields: Record<string, unknown> = {};
  for (const name of Object.keys(diagnostics)) {
    if (name === "arms") break;
    fields[name] = diagnostics[name as keyof HedgeDiagnostics];
  }
  const json = JSON.stringify(fields);
  return json === "{}" ? "{" : json.slice(0, -1) + ",";
}

/** The compact header of a race its primary won alone: `head` (the fields before the arms), the arm without its duration and activity id, and the end. */
function lonePrimaryHeader(head: string, region: string, status: number | undefined, charge: number | undefined, total: number): string {
  const name = JSON.stringify(region);
  return (
    head + '"arms":[{"region":' + name + ',"reason":"primary","startOffsetMs":0,"outcome":"returned"' +
    (status === undefined ? "" : ',"status":' + jsonNumber(status)) + (charge === undefined ? "" : ',"requestCharge":' + jsonNumber(charge)) +
    '}],"hedgeFired":false,"totalRequestCharge":' + jsonNumber(total) + ',"final":true,"hedgeWon":false,"terminalState":"primaryWon","winningRegion":' + name + "}"
  );
}

/**
 * The compact headers of the races that one planned head's reads win alone
 * (see {@link compactLonePrimary}), without a record: what a
 * {@link DeferredRecord} writes. The head is found among the recent ones
 * once, and kept, so that no read looks it up.
 */
export class LoneHeaders {
  private cached: CachedHead | undefined;

  constructor(readonly head: Readonly<Pick<HedgeDiagnostics, CachedHeadField>>) {}

  /** The header of a race the primary won alone, in the head's primary region, with `status` and `charge`. */
  value(status: number, charge: number | undefined): string {
    return loneHeaderOf((this.cached ??= cachedHead(false, this.head)), this.head.primaryRegion ?? "", status, charge, charge ?? 0);
  }
}

/**
 * The compact headers of the skipped records of one template (see
 * {@link headerValue}), without a record: what a deferred skipped record
 * writes. The template's head is found among the recent ones once, and kept.
 */
export class SkippedHeaders {
  private cached: CachedHead | undefined;

  /** @param template - a skipped record of the kind, as `skippedRecord` makes it; its charge is not read. */
  constructor(readonly template: Readonly<SkippedDiagnostics>) {}

  /** The header of a skipped record of the template's kind with `charge`. */
  value(charge: number): string {
    return skippedHeaderOf((this.cached ??= cachedHead(true, this.template)), charge);
  }
}

/** A record of a request that was not hedged: its skip reason is always set. */
export type SkippedDiagnostics = HedgeDiagnostics & { skipReason: HedgeSkipReason };

/** The compact header of a skipped record of a cached head, cached per charge. */
function skippedHeaderOf(head: CachedHead, charge: number): string {
  let cached = head.skippedHeader;
  if (cached === undefined || !Object.is(cached.charge, charge)) {
    head.skippedHeader = cached = { charge, header: head.json + ',"totalRequestCharge":' + jsonNumber(charge) + ',"final":true}' };
  }
  return cached.header;
}

/** The compact header of a race a cached head's primary won alone in `region`, cached per status and charge in its primary region. */
function loneHeaderOf(head: CachedHead, region: string, status: number | undefined, charge: number | undefined, total: number): string {
  if (region !== head.primaryRegion) return lonePrimaryHeader(head.json, region, status, charge, total);
  let cached = head.lonePrimary;
  if (cached === undefined || cached.status !== status || !Object.is(cached.charge, charge) || !Object.is(cached.total, total)) {
    head.lonePrimary = cached = { status, charge, total, header: lonePrimaryHeader(head.json, region, status, charge, total) };
  }
  return cached.header;
}

/**
 * The compact header of a race whose primary answered alone before any
 * hedge (the common case with hedging on), or `undefined` for any other
 * record: cached per kind of request, and made again only when the status
 * or the charge differs from the last such read's.
 */
function compactLonePrimary(diagnostics: HedgeDiagnostics): string | undefined {
  const arm = diagnostics.arms[0];
  if (
    arm === undefined || diagnostics.arms.length !== 1 || diagnostics.terminalState !== "primaryWon" || diagnostics.ranking !== undefined ||
    diagnostics.skipReason !== undefined || arm.error !== undefined || arm.subStatus !== undefined || arm.sessionTokenOmitted !== undefined ||
    arm.drainEnd !== undefined || arm.reason !== "primary" || arm.outcome !== "returned" || arm.startOffsetMs !== 0 || diagnostics.hedgeFired ||
    diagnostics.hedgeWon || diagnostics.winningRegion !== arm.region
  ) {
    return undefined;
  }
  return loneHeaderOf(cachedHead(false, diagnostics), arm.region, arm.status, arm.requestCharge, diagnostics.totalRequestCharge);
}

/**
 * The header value of a record: its JSON. The two common records, a race
 * its primary won alone and a skipped request, are written compact: cached
 * per kind of request, and without what differs from one read of a kind to
 * the next (the arm's duration and activity id), so that a read that is not
 * hedged writes no JSON of its own. {@link getHedgeDiagnostics} completes
 * the activity id from the `x-ms-activity-id` of the same headers; the
 * live record (on the response, and on the `headers` `@azure/cosmos`
 * returns) has every field.
 */
function headerValue(diagnostics: HedgeDiagnostics): string {
  if (diagnostics.routing === undefined && diagnostics.final === true) {
    if (diagnostics.terminalState === "skipped") return skippedHeaderOf(cachedHead(true, diagnostics), diagnostics.totalRequestCharge);
    const compact = compactLonePrimary(diagnostics);
    if (compact !== undefined) return compact;
  }
  return JSON.stringify(diagnostics);
}

/**
 * Attaches diagnostics to a response (kept with it, and written to the
 * `x-cosmos-hedging-diagnostics` header, which `@azure/cosmos` copies into
 * `response.headers`) or to a thrown error (and to the response it carries).
 */
export function attachHedgeDiagnostics(target: PipelineResponse | object, diagnostics: PublishedRecord): void {
  let response: PipelineResponse | undefined;
  if (isPipelineResponse(target)) {
    response = target;
  } else {
    attachedToErrors.set(target, recordOf(diagnostics));
    response = responseOfError(target);
    if (response === undefined) return;
  }
  attachedToResponses.set(response, diagnostics);
  response.headers.set(hedgeDiagnosticsHeaderName, diagnostics instanceof DeferredRecord ? diagnostics.headerValue() : headerValue(diagnostics));
}

function isPipelineResponse(value: object): value is PipelineResponse {
  return "status" in value && "headers" in value && "request" in value;
}

function responseOfError(error: object): PipelineResponse | undefined {
  const response = (error as { response?: unknown }).response;
  return typeof response === "object" && response !== null && isPipelineResponse(response) ? response : undefined;
}

function isHttpHeaders(value: object): value is HttpHeaders {
  return typeof (value as { get?: unknown }).get === "function" && typeof (value as { toJSON?: unknown }).toJSON === "function";
}

function parseHeaderValue(value: unknown): HedgeDiagnostics | undefined {
  if (typeof value !== "string") return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === "object" && parsed !== null && "policy" in parsed ? (parsed as HedgeDiagnostics) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A compact header's record (see {@link headerValue}) completed from the
 * response's own headers: the activity id of its one arm, which is the
 * winner's too. A record that has it already, or a response without one,
 * is left as it is.
 */
function completedCompact(record: HedgeDiagnostics, header: (name: string) => unknown): HedgeDiagnostics {
  if (record.terminalState !== "primaryWon" || !Array.isArray(record.arms) || record.arms.length !== 1) return record;
  const arm = record.arms[0];
  const activityId = header(CosmosHeaders.activityId);
  if (typeof arm !== "object" || arm === null || arm.activityId !== undefined || typeof activityId !== "string") return record;
  arm.activityId = activityId;
  record.winningActivityId = activityId;
  return record;
}

function fromHeaders(headers: unknown): HedgeDiagnostics | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const header = isHttpHeaders(headers) ? (name: string) => headers.get(name) : (name: string) => (headers as Record<string, unknown>)[name];
  const record = parseHeaderValue(header(hedgeDiagnosticsHeaderName));
  return record === undefined ? undefined : completedCompact(record, header);
}

/**
 * Reads the {@link HedgeDiagnostics} of a request from whatever the caller
 * holds: a `PipelineResponse`, its `HttpHeaders`, the plain `headers` object
 * of an `@azure/cosmos` response or error, an `@azure/cosmos` response
 * itself (anything with `headers`), or an error thrown by a hedged request.
 * @returns the diagnostics, or `undefined` when no hedging policy handled the request.
 */
export function getHedgeDiagnostics(source: unknown): HedgeDiagnostics | undefined {
  if (typeof source !== "object" || source === null) return undefined;
  const direct = attachedToErrors.get(source) ?? attachedToResponses.get(source);
  if (direct !== undefined) return recordOf(direct);
  if (isHttpHeaders(source)) return fromHeaders(source);
  const nested = (source as { headers?: unknown }).headers;
  if (nested !== undefined) {
    const live = typeof nested === "object" && nested !== null ? attachedToResponses.get(nested) : undefined;
    if (live !== undefined) return recordOf(live);
    const found = fromHeaders(nested);
    if (found !== undefined) return found;
  }
  const response = responseOfError(source);
  if (response !== undefined) return getHedgeDiagnostics(response);
  return fromHeaders(source);
}
