import { attachDetection, OperationDetection } from "../diagnostics/detection.js";
import { operationHeaderName, registerOperation, unregisterOperation } from "../diagnostics/dispatchRecording.js";
import { attachHedgeDiagnosticsToHeaders } from "../diagnostics/diagnostics.js";
import { recordOperationForCollectors } from "../diagnostics/diagnosticsCollector.js";

/** The parts of an `@azure/cosmos` request context that the plugins read and write. */
interface CosmosOperationContext {
  headers?: Record<string, unknown>;
}

/**
 * An `@azure/cosmos` request plugin (`PluginConfig` with `on: PluginOn.request`),
 * typed structurally as {@link CosmosOperationPlugin} is.
 */
export interface CosmosAttemptPlugin {
  readonly on: "request";
  readonly plugin: CosmosOperationPlugin["plugin"];
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
 * Runs `next(context)` with the operation registered and named in
 * `headers`, then unregisters it, attaches the record to what the SDK
 * returned or threw (with `withLastRecord`, the hedging record of its last
 * attempt to that outcome's `headers` too) and ends the operation, whichever
 * way it ended. Chained rather than `async`: every operation runs through
 * it, and an async frame with its `await` costs two promises more.
 */
function runAs<C, T>(operation: OperationDetection, headers: Record<string, unknown>, next: (context: C) => Promise<T>, context: C, withLastRecord: boolean): Promise<T> {
  const id = registerOperation(operation);
  headers[operationHeaderName] = id;
  const end = (outcome: unknown): void => {
    unregisterOperation(id);
    delete headers[operationHeaderName];
    attachDetection(outcome, operation);
    if (withLastRecord) {
      const outcomeHeaders = headersOf(outcome);
      if (outcomeHeaders !== undefined && operation.lastRecord !== undefined) attachHedgeDiagnosticsToHeaders(outcomeHeaders, operation.lastRecord);
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

/**
 * The operation plugin `withHedging` installs on the `CosmosClient`.
 * `@azure/cosmos` runs operation plugins once per operation, around its
 * whole retry loop, so the record it starts (see `getHedgingDetection`)
 * sees every HTTP attempt the SDK makes for the operation, and every hedge
 * of each. Its attempts carry the operation's id in a header that the
 * hedging client reads and removes. The record goes on the response the
 * SDK returns and on the error it throws (and their `headers`), with the
 * hedging record of the last attempt, the live one.
 */
export function operationPlugin(): CosmosOperationPlugin {
  return {
    on: "operation",
    plugin: (context, _diagnosticNode, next) => {
      const { headers } = context;
      if (headers === undefined) return next(context);
      const operation = new OperationDetection();
      recordOperationForCollectors(operation);
      return runAs(operation, headers, next, context, true);
    },
  };
}

/** The records of the operations that run without operation plugins, by the request context their attempts share. */
const contextOperations = new WeakMap<object, OperationDetection>();

/**
 * The request plugin that gives a record to the operations `@azure/cosmos`
 * runs without operation plugins: in 4.x the pages of queries and feeds and
 * the query plan go to its retry loop directly. The SDK hands every attempt
 * of such an operation the same request context, so the record is found by
 * it. It sits after the operation plugin: there @azure/cosmos 4.10.1 hands
 * it the SDK's own context even when a plugin of the user's before it
 * passed a copy along, so every retry of a page finds the page's record.
 * Without an operation around it, the record is ended after each attempt
 * and reopened by the next (the SDK's retry), so it is final between
 * attempts; read it once the call has returned, or through
 * {@link collectHedgeDiagnostics}. An attempt of an operation the operation
 * plugin already names passes through.
 */
export function feedAttemptPlugin(): CosmosAttemptPlugin {
  return {
    on: "request",
    plugin: (context, _diagnosticNode, next) => {
      const { headers } = context;
      if (headers === undefined || headers[operationHeaderName] !== undefined) return next(context);
      let operation = contextOperations.get(context);
      if (operation === undefined) {
        operation = new OperationDetection();
        contextOperations.set(context, operation);
        recordOperationForCollectors(operation);
      } else {
        operation.operationReopened();
      }
      // Registered per attempt, so that nothing holds the record once its last attempt has ended.
      return runAs(operation, headers, next, context, false);
    },
  };
}
