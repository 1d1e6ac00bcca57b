import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import { requestChargeOf } from "../cosmos/statusTables.js";
import type { OperationDetection, RequestedRegionReason } from "./detection.js";
import type { PublishedRecord } from "./diagnostics.js";
import { ObjectSlot } from "../request/objectSlot.js";
import { carriedStateOf, requestStateOf, stateIfAny } from "../request/requestState.js";
import { pluginHeaderValue } from "../cosmos/headers.js";

/**
 * The request header by which the request plugin names the operation an
 * HTTP attempt belongs to, when the attempt cannot be handed over; the
 * hedging client removes it, so it never leaves the process.
 */
export const operationHeaderName = "x-cosmos-hedging-operation";

/** The operations whose attempts carry their id in {@link operationHeaderName}, by that id. */
const running = new Map<string, OperationDetection>();
let nextId = 0;

/**
 * Registers a running operation, once. Only the attempts that reach the
 * hedging client through a pipeline of the SDK's (its AAD auth awaits a
 * token on the way) are linked through the header; every other attempt is
 * handed over (see `handOver`).
 * @returns the id its attempts carry in {@link operationHeaderName}.
 */
export function registerOperation(operation: OperationDetection): string {
  let id = operation.headerId;
  if (id === undefined) {
    id = pluginHeaderValue(String(nextId++));
    operation.headerId = id;
    running.set(id, operation);
  }
  return id;
}

/** Forgets an operation that has ended, by its id; requests of it still running keep their link. */
export function unregisterOperation(id: string): void {
  const operation = running.get(id);
  running.delete(id);
  if (operation !== undefined) operation.headerId = undefined;
}

/** Forgets an operation that has ended, if it was registered. */
export function forgetOperation(operation: OperationDetection): void {
  const id = operation.headerId;
  if (id !== undefined) unregisterOperation(id);
}

/** The operation running on an `@azure/cosmos` request context, by the context's `headers` (shared by every attempt of it, and by a plugin's shallow copy). */
const namedOperations = new ObjectSlot<OperationDetection>("cosmos-hedging running operation");

/** Names `operation` as the one running on the request context whose headers these are, until {@link unnameOperation}. */
export function nameOperation(headers: object, operation: OperationDetection): void {
  namedOperations.set(headers, operation);
}

/** The operation running on the request context whose headers these are. */
export function operationNamedIn(headers: object): OperationDetection | undefined {
  return namedOperations.get(headers);
}

/** Ends the naming of {@link nameOperation}. */
export function unnameOperation(headers: object): void {
  namedOperations.clear(headers);
}

/** Links the SDK's request of an attempt handed over to the hedging client to its operation. */
export function noteHandedAttempt(request: PipelineRequest, operation: OperationDetection): void {
  requestStateOf(request).operation = operation;
}

/** The `@azure/cosmos` operation `request` is an attempt of, once handed over or linked (see {@link linkAttempt}). */
export function operationOfAttempt(request: PipelineRequest): OperationDetection | undefined {
  return stateIfAny(request)?.operation;
}

/** One HTTP attempt the SDK made for an operation, as it reached the hedging client. */
export interface Attempt {
  readonly operation: OperationDetection;
  /** Whether its first request (the SDK's own, not a hedge) has gone out. */
  sent: boolean;
}

/**
 * Links an HTTP attempt of an `@azure/cosmos` operation to the operation's
 * record: the one it was handed over with, or the one whose id its header
 * carries (the header is removed, so that it never leaves the process).
 * `undefined` for a request of no running operation.
 */
export function linkAttempt(request: PipelineRequest): Attempt | undefined {
  const handed = stateIfAny(request)?.operation;
  if (handed !== undefined) return { operation: handed, sent: false };
  // A copy a policy of the caller's made of the SDK's request (a spread, a proxy) is the same attempt.
  const carried = carriedStateOf(request)?.operation;
  if (carried !== undefined) {
    requestStateOf(request).operation = carried;
    return { operation: carried, sent: false };
  }
  const id = request.headers.get(operationHeaderName);
  if (id === undefined) return undefined;
  request.headers.delete(operationHeaderName);
  const operation = running.get(id);
  if (operation === undefined) return undefined;
  requestStateOf(request).operation = operation;
  return { operation, sent: false };
}

/**
 * Keeps the record a hedging policy made of an attempt as its operation's
 * latest (see `OperationDetection.lastRecord`): the live record of the
 * attempt the SDK's call ends with.
 */
export function noteAttemptRecord(request: PipelineRequest, diagnostics: PublishedRecord): void {
  const operation = operationOfAttempt(request);
  if (operation !== undefined) operation.lastRecord = diagnostics;
}

/** Why the SDK sent its attempt to `region`, from what its previous attempt did. */
function sdkReason(operation: OperationDetection, region: string | undefined): RequestedRegionReason {
  if (!operation.started) return "initial";
  const previous = operation.lastSdkRegion();
  if (region !== undefined && previous !== undefined && normalizeRegionName(region) !== normalizeRegionName(previous)) return "regionFailover";
  return operation.lastReplied ? "operationRetry" : "transportRetry";
}

/** Notes the SDK's own request of an attempt going out to `region`, with the reason its previous attempt gives it. */
export function noteSdkRequestSent(operation: OperationDetection, region: string | undefined): void {
  operation.requestSent(region, sdkReason(operation, region));
}

/**
 * Notes the end of the SDK's own request of an attempt: the reply, when the
 * service gave one (any status), decides the reason of its next attempt.
 * @returns the reply's request charge, when it has one.
 */
export function noteSdkRequestEnded(operation: OperationDetection, region: string | undefined, response: PipelineResponse | undefined): number | undefined {
  const charge = response === undefined ? undefined : requestChargeOf(response);
  operation.requestEnded(region, response !== undefined, charge);
  operation.lastStatus = response?.status;
  return charge;
}

/**
 * How the requests of an attempt go out: each is noted with its region and
 * reason, and its reply (region and request charge) as it arrives, a
 * drained loser's included. The first request of an attempt is the SDK's,
 * and whether the service replied to it decides the reason of the SDK's
 * next attempt; any other request of it is a hedge. A `next` that throws ends the
 * request in the record and rejects, as an `async` policy would.
 */
export function recordingSend(attempt: Attempt, regions: RegionCache, next: SendRequest): SendRequest {
  const { operation } = attempt;
  return (request) => {
    const region = regions.regionOf(request.url)?.name;
    const sdkRequest = !attempt.sent;
    attempt.sent = true;
    if (sdkRequest) noteSdkRequestSent(operation, region);
    else operation.requestSent(region, "hedging");
    let sent: Promise<PipelineResponse>;
    try {
      sent = next(request);
    } catch (error) {
      // A policy of the user's below that throws rather than rejects: the request ended unsent, and the record must
      // say so to become final.
      noteRequestEnded(operation, region, undefined, sdkRequest);
      return Promise.reject(error);
    }
    return sent.then(
      (response) => {
        // The pipeline returns every status as a response: the service replied, whatever it said.
        noteRequestEnded(operation, region, response, sdkRequest);
        return response;
      },
      (error: unknown) => {
        noteRequestEnded(operation, region, undefined, sdkRequest);
        throw error;
      },
    );
  };
}

/** Notes the end of a request of an attempt: the SDK's own (see {@link noteSdkRequestEnded}) or a hedge. */
function noteRequestEnded(operation: OperationDetection, region: string | undefined, response: PipelineResponse | undefined, sdkRequest: boolean): void {
  if (sdkRequest) noteSdkRequestEnded(operation, region, response);
  else operation.requestEnded(region, response !== undefined, response === undefined ? undefined : requestChargeOf(response));
}
