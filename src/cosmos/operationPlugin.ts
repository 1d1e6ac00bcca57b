import { attachDetection, OperationDetection } from "../diagnostics/detection.js";
import { forgetOperation, nameOperation, operationHeaderName, unnameOperation } from "../diagnostics/dispatchRecording.js";
import { attachHedgeDiagnosticsToHeaders } from "../diagnostics/diagnostics.js";
import { recordOperationForCollectors } from "../diagnostics/diagnosticsCollector.js";
import { forgetOperationContext } from "./sdkBookkeeping.js";
import type { SdkVersionGate } from "./sdkVersion.js";
import { standsAsideForContext } from "./sdkVersion.js";

/** The parts of an `@azure/cosmos` request context that the plugins read and write. */
interface CosmosOperationContext {
  headers?: Record<string, unknown>;
  options?: { excludedLocations?: unknown; initialHeaders?: unknown };
}

/**
 * An `@azure/cosmos` operation plugin (`PluginConfig` with `on: PluginOn.operation`),
 * typed structurally so that this package needs none of the SDK's types.
 */
export interface CosmosOperationPlugin {
  readonly on: "operation";
  readonly plugin: (context: CosmosOperationContext, diagnosticNode: unknown, next: (context: CosmosOperationContext) => Promise<unknown>) => Promise<unknown>;
}

function headersOf(value: unknown): object | undefined {
  const headers = typeof value === "object" && value !== null ? (value as { headers?: unknown }).headers : undefined;
  return typeof headers === "object" && headers !== null ? headers : undefined;
}

/**
 * Runs `next(context)` with the operation named on `headers` (see
 * `nameOperation`), then unnames it, attaches the record to what the SDK
 * returned or threw (with `withLastRecord`, the hedging record of its last
 * attempt to that outcome's `headers` too) and ends the operation, whichever
 * way it ended. Chained rather than `async`: every operation runs through
 * it, and an async frame with its `await` costs two promises more.
 */
export function runAs<C, T>(operation: OperationDetection, headers: Record<string, unknown>, next: (context: C) => Promise<T>, context: C, withLastRecord: boolean): Promise<T> {
  nameOperation(headers, operation);
  if (withLastRecord) operation.recordGoesOnOutcome = true;
  const end = (outcome: unknown): void => {
    unnameOperation(headers);
    // Written by the request plugin on attempts it could not hand over, which registered the operation (and kept its context).
    if (operation.headerId !== undefined) {
      if (headers[operationHeaderName] !== undefined) delete headers[operationHeaderName];
      forgetOperation(operation);
      forgetOperationContext(operation);
    }
    try {
      attachDetection(outcome, operation);
      if (withLastRecord) {
        const outcomeHeaders = headersOf(outcome);
        if (outcomeHeaders !== undefined && operation.lastRecord !== undefined) attachHedgeDiagnosticsToHeaders(outcomeHeaders, operation.lastRecord);
      }
    } catch {
      // What the SDK returned or threw goes to the caller as it is, whatever became of the records on it (an object of a
      // plugin of the user's that refuses them, say): the records are this package's, the outcome is the SDK's.
    }
    operation.operationEnded();
  };
  let sent: Promise<T>;
  try {
    sent = next(context);
  } catch (error) {
    // A plugin of the user's after this one that throws rather than rejects: the operation ends all the same.
    end(error);
    return Promise.reject(error);
  }
  return sent.then(
    (result) => {
      end(result);
      return result;
    },
    (error: unknown) => {
      end(error);
      throw error;
    },
  );
}

/** An `@azure/cosmos` request plugin (`PluginConfig` with `on: PluginOn.request`), typed structurally as {@link CosmosOperationPlugin} is. */
export interface CosmosPassThroughPlugin {
  readonly on: "request";
  readonly plugin: (context: CosmosOperationContext, diagnosticNode: unknown, next: (context: CosmosOperationContext) => Promise<unknown>) => Promise<unknown>;
}

/**
 * A request plugin that only passes each attempt on, placed just before the
 * operation plugin: @azure/cosmos 4.10.1 hands its own request context past
 * a plugin of the other kind, so the operation plugin names its record on
 * the headers of the context the SDK sends even when an operation plugin of
 * the user's before it passed a copy with copied headers along.
 */
export function ownContextPlugin(): CosmosPassThroughPlugin {
  return { on: "request", plugin: (context, _diagnosticNode, next) => next(context) };
}

/**
 * The operation plugin `withHedging` installs on the `CosmosClient`.
 * `@azure/cosmos` runs operation plugins once per operation, around its
 * whole retry loop, so the record it starts (see `getHedgingDetection`)
 * sees every HTTP attempt the SDK makes for the operation, and every hedge
 * of each. The record is named on the context's `headers` object, where
 * the request plugin finds it for each attempt. The record goes on the response the
 * SDK returns and on the error it throws (and their `headers`), with the
 * hedging record of the last attempt, the live one. An operation
 * `unrecorded` leaves out (see `unrecordedOperations`) passes on untouched,
 * and so does every operation while the client's `gate` stands aside (an
 * SDK below the supported floor).
 */
export function operationPlugin(unrecorded?: (context: CosmosOperationContext) => boolean, gate?: SdkVersionGate): CosmosOperationPlugin {
  return {
    on: "operation",
    plugin: (context, _diagnosticNode, next) => {
      const { headers } = context;
      if (headers === undefined || (gate !== undefined && standsAsideForContext(gate, headers)) || unrecorded?.(context) === true) return next(context);
      const operation = new OperationDetection();
      recordOperationForCollectors(operation);
      return runAs(operation, headers, next, context, true);
    },
  };
}

/** The records of the operations that run without operation plugins, by the request context their attempts share. */
const contextOperations = new WeakMap<object, OperationDetection>();

/**
 * The record of an operation `@azure/cosmos` runs without operation
 * plugins, for one of its attempts: in 4.x the pages of queries and feeds
 * and the query plan go to its retry loop directly. The SDK hands every
 * attempt of such an operation the same request context, so the record is
 * found by it. Without an operation around it, the record is ended after
 * each attempt (see {@link runAs}) and reopened by the next (the SDK's
 * retry), so it is final between attempts; read it once the call has
 * returned, or through `collectHedgeDiagnostics`.
 */
export function feedOperationOf(context: object): OperationDetection {
  let operation = contextOperations.get(context);
  if (operation === undefined) {
    operation = new OperationDetection();
    contextOperations.set(context, operation);
    recordOperationForCollectors(operation);
  } else {
    operation.operationReopened();
  }
  return operation;
}
