import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import { requestChargeOf } from "../cosmos/statusTables.js";
import { getHedgeDiagnostics } from "./diagnostics.js";
import { ObjectSlot } from "../request/objectSlot.js";
import type { OperationDetection, RequestedRegionReason } from "./detection.js";

/**
 * The request header by which the operation plugin names the operation an
 * HTTP attempt belongs to; {@link operationLinkPolicy} removes it, so it
 * never leaves the process.
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
interface Attempt {
  readonly operation: OperationDetection;
  /** Whether its first request (the SDK's own, not a hedge) has gone out. */
  sent: boolean;
}

const attempts = new ObjectSlot<Attempt>("cosmos-hedging attempt");

/** Where a hedge arm's copy points back to the request it was copied from (see `cloneRequestFor`). */
const originalRequest = Symbol.for("@azure/core-client original request");

function attemptOf(request: PipelineRequest): Attempt | undefined {
  const original = (request as unknown as Record<symbol, unknown>)[originalRequest];
  return attempts.get(typeof original === "object" && original !== null ? original : request);
}

/** The name of the {@link operationLinkPolicy}. */
export const operationLinkPolicyName = "operationLinkPolicy";

/**
 * The first policy of a hedging client: links each HTTP attempt of an
 * `@azure/cosmos` operation to the operation's record, and notes when the
 * attempt ends whether the service replied (the next attempt's reason
 * depends on it) and the record a hedging policy made of it.
 */
export function operationLinkPolicy(): PipelinePolicy {
  return {
    name: operationLinkPolicyName,
    sendRequest: async (request, next) => {
      const id = request.headers.get(operationHeaderName);
      if (id === undefined) return next(request);
      request.headers.delete(operationHeaderName);
      const operation = running.get(id);
      if (operation === undefined) return next(request);
      attempts.set(request, { operation, sent: false });
      try {
        const response = await next(request);
        operation.lastReplied = true;
        operation.lastRecord = getHedgeDiagnostics(response) ?? operation.lastRecord;
        return response;
      } catch (error) {
        // The pipeline returns every status as a response: a rejection is a request that got no reply.
        operation.lastReplied = false;
        operation.lastRecord = getHedgeDiagnostics(error) ?? operation.lastRecord;
        throw error;
      }
    },
  };
}

/** Why the SDK sent its attempt to `region`, from what its previous attempt did. */
function sdkReason(operation: OperationDetection, region: string | undefined): RequestedRegionReason {
  if (!operation.started) return "initial";
  const previous = operation.lastSdkRegion();
  if (region !== undefined && previous !== undefined && normalizeRegionName(region) !== normalizeRegionName(previous)) return "regionFailover";
  return operation.lastReplied ? "operationRetry" : "transportRetry";
}

/** The name of the {@link dispatchRecordPolicy}. */
export const dispatchRecordPolicyName = "dispatchRecordPolicy";

/**
 * The last policy of a hedging client, just above the transport: every
 * request that goes out for an operation is noted with its region and
 * reason, and its reply (region and request charge) as it arrives, a
 * drained loser's included. The first request of an attempt is the SDK's;
 * any other request of it is a hedge.
 */
export function dispatchRecordPolicy(regions: RegionCache): PipelinePolicy {
  return {
    name: dispatchRecordPolicyName,
    sendRequest: async (request, next) => {
      const attempt = attemptOf(request);
      if (attempt === undefined) return next(request);
      const { operation } = attempt;
      const region = regions.regionOf(request.url)?.name;
      const reason = attempt.sent ? "hedging" : sdkReason(operation, region);
      attempt.sent = true;
      operation.requestSent(region, reason);
      let response;
      try {
        response = await next(request);
      } catch (error) {
        operation.requestEnded(region, false, undefined);
        throw error;
      }
      operation.requestEnded(region, true, requestChargeOf(response));
      return response;
    },
  };
}
