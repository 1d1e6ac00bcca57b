import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import { requestChargeOf } from "../cosmos/statusTables.js";
import { getHedgeDiagnostics } from "./diagnostics.js";
import type { OperationDetection, RequestedRegionReason } from "./detection.js";

/**
 * The request header by which the operation plugin names the operation an
 * HTTP attempt belongs to; {@link linkAttempt} removes it, so it never
 * leaves the process.
 */
export const operationHeaderName = "x-cosmos-hedging-operation";

/** The operations running now, by the id their attempts carry. */
const running = new Map<string, OperationDetection>();
let nextId = 0;

/** Registers a starting operation. @returns the id its attempts carry in {@link operationHeaderName}. */
export function registerOperation(operation: OperationDetection): string {
  const id = String(nextId++);
  running.set(id, operation);
  return id;
}

/** Forgets an operation that has ended; requests of it still running keep their link. */
export function unregisterOperation(id: string): void {
  running.delete(id);
}

/** One HTTP attempt the SDK made for an operation, as it reached the hedging client. */
export interface Attempt {
  readonly operation: OperationDetection;
  /** Whether its first request (the SDK's own, not a hedge) has gone out. */
  sent: boolean;
}

/**
 * Links an HTTP attempt of an `@azure/cosmos` operation to the operation's
 * record, by the id its header carries, and removes the header, so that it
 * never leaves the process. `undefined` for a request of no running operation.
 */
export function linkAttempt(request: PipelineRequest): Attempt | undefined {
  const id = request.headers.get(operationHeaderName);
  if (id === undefined) return undefined;
  request.headers.delete(operationHeaderName);
  const operation = running.get(id);
  return operation === undefined ? undefined : { operation, sent: false };
}

/**
 * Notes, when the attempt settles, whether the service replied (the next
 * attempt's reason depends on it) and the record a hedging policy made of it.
 */
export function attemptSettled(attempt: Attempt, sent: Promise<PipelineResponse>): Promise<PipelineResponse> {
  const { operation } = attempt;
  return sent.then(
    (response) => {
      operation.lastReplied = true;
      operation.lastRecord = getHedgeDiagnostics(response) ?? operation.lastRecord;
      return response;
    },
    (error: unknown) => {
      // The pipeline returns every status as a response: a rejection is a request that got no reply.
      operation.lastReplied = false;
      operation.lastRecord = getHedgeDiagnostics(error) ?? operation.lastRecord;
      throw error;
    },
  );
}

/** Why the SDK sent its attempt to `region`, from what its previous attempt did. */
function sdkReason(operation: OperationDetection, region: string | undefined): RequestedRegionReason {
  if (!operation.started) return "initial";
  const previous = operation.lastSdkRegion();
  if (region !== undefined && previous !== undefined && normalizeRegionName(region) !== normalizeRegionName(previous)) return "regionFailover";
  return operation.lastReplied ? "operationRetry" : "transportRetry";
}

/**
 * How the requests of an attempt go out: each is noted with its region and
 * reason, and its reply (region and request charge) as it arrives, a
 * drained loser's included. The first request of an attempt is the SDK's;
 * any other request of it is a hedge. A `next` that throws ends the
 * request in the record and rejects, as an `async` policy would.
 */
export function recordingSend(attempt: Attempt, regions: RegionCache, next: SendRequest): SendRequest {
  const { operation } = attempt;
  return (request) => {
    const region = regions.regionOf(request.url)?.name;
    const reason = attempt.sent ? "hedging" : sdkReason(operation, region);
    attempt.sent = true;
    operation.requestSent(region, reason);
    let sent: Promise<PipelineResponse>;
    try {
      sent = next(request);
    } catch (error) {
      // A policy of the user's below that throws rather than rejects: the request ended unsent, and the record must
      // say so to become final.
      operation.requestEnded(region, false, undefined);
      return Promise.reject(error);
    }
    return sent.then(
      (response) => {
        operation.requestEnded(region, true, requestChargeOf(response));
        return response;
      },
      (error: unknown) => {
        operation.requestEnded(region, false, undefined);
        throw error;
      },
    );
  };
}
