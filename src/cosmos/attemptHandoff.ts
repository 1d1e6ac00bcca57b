import type { OperationDetection } from "../diagnostics/detection.js";
import type { OperationKind } from "./operationKind.js";

/**
 * What the `@azure/cosmos` request plugin knows of an attempt that the
 * hedging client needs: the SDK request's options and the operation it
 * belongs to.
 */
export interface SdkAttempt {
  /** The hedging client the SDK was given, which is to take it. */
  readonly client: object;
  /** The SDK request's `excludedLocations`, checked and copied; or the {@link sdkExclusionsRefused} marker of a list that breaks the region-name rule. */
  readonly sdkExcluded: readonly string[] | string;
  /** Whether the attempt is one of the SDK's retries. */
  readonly sdkRetry: boolean;
  /** The record of the operation the attempt belongs to, if one runs. */
  readonly operation: OperationDetection | undefined;
  /**
   * Whether the attempt is plain: no `excludedLocations`, not one of the
   * SDK's retries, and no header of this package's among its request's
   * (none in `initialHeaders` or the client's `defaultHeaders`, no plugin
   * of the user's that could add one), and no plugin of the user's after the
   * request plugin (appended to the list `withHedging` returns) that could
   * change the request or what the SDK returns. The hedging client may then
   * send it lazily, reading nothing from its headers.
   */
  readonly plain: boolean;
  /**
   * The attempt's kind, when the SDK's request context says it plainly: a
   * point read (`resourceType` "docs", `operationType` "read", `GET`), whose
   * path classification would find the same. Otherwise the request is
   * classified by its path and headers.
   */
  readonly kind?: OperationKind | undefined;
  /**
   * The endpoint the SDK resolved for a plain attempt (its request context's
   * `endpoint`, the origin of the URL it builds), by which the client finds
   * the region addressed.
   */
  readonly endpoint?: string | undefined;
  /**
   * Whether the attempt is of an operation a client with hedging off keeps
   * nothing of (see `unrecordedOperations`): it, or the SDK's retry of it,
   * goes out as the SDK built it, with nothing kept.
   */
  readonly unrecorded?: boolean | undefined;
  /**
   * The SDK's request context of the attempt, for the SDK's breaker to
   * count a failure of it that a hedge hides (see `keepAttemptContext`);
   * set by a client wired to the SDK's bookkeeping.
   */
  readonly context?: object | undefined;
  /** Set when the hedging client took it. */
  taken?: boolean;
}

/** The attempt being handed over, for the length of one synchronous call. */
let pending: SdkAttempt | undefined;

/**
 * Calls `next(context)` with `attempt` held for the hedging client to take.
 * Without a pipeline of its own (master-key and resource-token auth),
 * `@azure/cosmos` 4.x builds the HTTP request right after its request
 * plugins and calls `httpClient.sendRequest` in the same synchronous run,
 * so the client takes the attempt from here instead of from headers the SDK
 * would copy into the request and the client would parse and remove. It is
 * released when `next` returns, taken or not (`attempt.taken` says which):
 * nothing of one attempt can reach another request.
 * @returns what `next` returned.
 */
export function handOver<C, T>(attempt: SdkAttempt, next: (context: C) => T, context: C): T {
  pending = attempt;
  try {
    return next(context);
  } finally {
    pending = undefined;
  }
}

/** The attempt being handed over to `client`, taken (once) by the client the SDK is calling. */
export function takeHandedOver(client: object): SdkAttempt | undefined {
  const attempt = pending;
  if (attempt === undefined || attempt.client !== client) return undefined;
  pending = undefined;
  attempt.taken = true;
  return attempt;
}
