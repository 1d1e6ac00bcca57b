import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { RequestHedgingControls } from "../request/requestModel.js";
import { requestControlsOf, setRequestControls } from "../request/requestControls.js";
import { logger } from "../log.js";
import { operationOf, outgoingOf } from "../request/requestState.js";
import type { RegionCache } from "../topology/regionCache.js";
import { sendObservingAccount } from "../topology/accountObservation.js";

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
}

/** What a policy of this package does with the requests it sends itself: races them, or sends them and records why not. */
export interface RequestHandler {
  /** The operations it sends; any other passes on. */
  readonly kinds: ReadonlySet<OperationKind>;
  send(request: PipelineRequest, next: SendRequest, operation: OperationKind, controls: RequestHedgingControls): Promise<PipelineResponse>;
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

/** A pipeline policy of this package: one step or one handler over {@link composeHandlers}. */
export function policyOver(name: string, regions: RegionCache, stage: RequestStep | RequestHandler): PipelinePolicy {
  const sendRequest = "send" in stage ? composeHandlers(regions, [], [stage]) : composeHandlers(regions, [stage], []);
  return { name, sendRequest };
}
