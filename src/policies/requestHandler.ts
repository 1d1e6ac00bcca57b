import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { RequestHedgingControls } from "../request/requestModel.js";
import { requestControlsOf, setRequestControls } from "../request/requestControls.js";
import { logger } from "../log.js";
import { operationOf, outgoingOf } from "../request/requestState.js";
import type { RegionCache, RegionEndpoint } from "../topology/regionCache.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { sendObservingAccount } from "../topology/accountObservation.js";
import { yieldSocketsTo } from "../race/socketHolders.js";
import { SdkVersionGate, standsAsideFor } from "../cosmos/sdkVersion.js";
import { removePackageHeaders } from "../cosmos/headers.js";

/**
 * What a policy of this package does to a request before anything is sent,
 * synchronously: re-pointing it, for instance. It returns the request's
 * controls as it leaves them (with the routing it recorded), and throws to
 * fail the request before it goes out.
 */
export interface RequestStep {
  /** The operations it applies to. */
  readonly kinds: ReadonlySet<OperationKind>;
  apply(request: PipelineRequest, operation: OperationKind, controls: RequestHedgingControls): RequestHedgingControls;
  /**
   * Whether it would leave a plain request of `operation` (see
   * {@link LayerRoute}) as it is, controls and all: a step that says so is
   * not asked to apply to it. A step without it is always asked.
   */
  leavesPlain?(operation: OperationDetection | undefined): boolean;
}

/** What a policy of this package does with the requests it sends itself: races them, or sends them and records why not. */
export interface RequestHandler {
  /** The operations it sends; any other passes on. */
  readonly kinds: ReadonlySet<OperationKind>;
  send(request: PipelineRequest, next: SendRequest, operation: OperationKind, controls: RequestHedgingControls): Promise<PipelineResponse>;
  /**
   * Sends a plain attempt of the SDK's (see {@link LayerRoute}) lazily: as
   * a pending read where it may be one, otherwise the way `send` would,
   * after `route.prepare`. `undefined` when it takes nothing lazily: the
   * layer then sends the request the full way, nothing of it having been
   * done or counted here. `sdkContext` is the SDK's request context of the
   * attempt, kept (see `keepAttemptContext`) only once a race is built.
   */
  sendLazily?(
    request: PipelineRequest,
    operation: OperationKind,
    addressed: RegionEndpoint,
    detection: OperationDetection | undefined,
    route: LayerRoute,
    sdkContext?: object,
  ): Promise<PipelineResponse> | undefined;
}

/**
 * How a `withHedging` client's layer sends an attempt the SDK handed over
 * plain (no exclusions, not a retry, no control headers; nothing of the
 * caller's in the pipeline): the request goes out as it is, and nothing is
 * kept on it until a policy needs to go the full way.
 */
export interface LayerRoute {
  /** The transport: where the caller's request goes as the primary, untouched. */
  readonly send: SendRequest;
  /**
   * Makes the request what the full way expects (its controls, its kind,
   * its transport and its operation kept with it, as the layer keeps them)
   * and returns where its requests go from there: through the operation's
   * detection record and the arms' tracing. With `primarySent`, the
   * request itself has gone out already, noted by the caller, and only
   * hedges will be.
   */
  prepare(request: PipelineRequest, operation: OperationKind, detection: OperationDetection | undefined, primarySent: boolean): SendRequest;
}

/**
 * The one way every policy of this package takes a request: its controls
 * read once (which strips their headers, so that none reaches the wire), the
 * request classified once, the account reads observed (so that a policy used
 * alone still learns the regions), then each step that applies to it, then
 * the first handler that sends it, or the rest of the pipeline. With
 * `sdkOptionsExpected` (a `withHedging` client's layer), a request whose
 * `@azure/cosmos` options are unknown is not hedged. A step's
 * throw rejects the request before it is sent. One composition serves one
 * policy or a whole client's worth of them, so that a client runs them as
 * one layer rather than as one layer each.
 */
export function composeHandlers(
  regions: RegionCache,
  steps: readonly RequestStep[],
  handlers: readonly RequestHandler[],
  sdkOptionsExpected = false,
): (request: PipelineRequest, next: SendRequest) => Promise<PipelineResponse> {
  const warning = { given: false };
  return (request, next) => {
    try {
      let controls = requestControlsOf(request);
      if (sdkOptionsExpected && controls.sdkOptionsKnown === undefined) controls = withSdkOptionsUnknown(request, controls, warning);
      const operation = operationOf(request);
      if (operation === "accountRead") return sendObservingAccount(regions, request, next);
      for (const step of steps) if (step.kinds.has(operation)) controls = step.apply(request, operation, controls);
      // A step may send a copy in the request's place (a frozen request it had to re-point).
      const outgoing = outgoingOf(request);
      for (const handler of handlers) if (handler.kinds.has(operation)) return handler.send(outgoing, next, operation, controls);
      return next(outgoing);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * Keeps from hedging a request that reached a `withHedging` client's layer
 * carrying nothing of the SDK's options: a policy of the caller's before the
 * layer sent a request it built afresh (a spread copy or a proxy carries the
 * original's, see `carriedStateOf`), so a hedge of it could go to a region
 * the SDK was told to avoid. The client's own exclusions and pins still
 * steer it.
 */
function withSdkOptionsUnknown(request: PipelineRequest, controls: RequestHedgingControls, warning: { given: boolean }): RequestHedgingControls {
  // Once per client: a policy that copies copies every request.
  if (!warning.given) {
    warning.given = true;
    logger.warning(
      "A request reached cosmosHedgingPolicy without the options @azure/cosmos gave the request it sent (a policy before it sent a request it built afresh?): it is sent unhedged.",
    );
  }
  const unhedged: RequestHedgingControls = { ...controls, hedging: false };
  setRequestControls(request, unhedged);
  return unhedged;
}

/**
 * A pipeline policy of this package: one step or one handler over
 * {@link composeHandlers}. Every request it takes first gets the socket a
 * hedge of this package holds, where it would otherwise wait for it (see
 * `yieldSocketsTo`). Under an `@azure/cosmos` below the supported floor
 * (see {@link SdkVersionGate}) it passes every request on as it came, less
 * this package's headers.
 */
export function policyOver(name: string, regions: RegionCache, stage: RequestStep | RequestHandler): PipelinePolicy {
  const compose = "send" in stage ? composeHandlers(regions, [], [stage]) : composeHandlers(regions, [stage], []);
  const gate = new SdkVersionGate();
  return {
    name,
    sendRequest: (request, next) => {
      if (standsAsideFor(gate, request)) {
        removePackageHeaders(request);
        return next(request);
      }
      yieldSocketsTo(request);
      return compose(request, next);
    },
  };
}
