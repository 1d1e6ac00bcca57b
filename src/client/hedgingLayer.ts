import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { EndpointRegions } from "../topology/endpointRegions.js";
import type { LayerRoute, RequestHandler, RequestStep } from "../policies/requestHandler.js";
import { composeHandlers } from "../policies/requestHandler.js";
import { linkAttempt, noteHandedAttempt, recordingSend } from "../diagnostics/dispatchRecording.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { classifyOperation } from "../cosmos/operationKind.js";
import { adoptPlainSdkOptions } from "../request/requestControls.js";
import { classifiedAs } from "../request/requestState.js";
import { markForCoreTransport } from "../race/armAbort.js";
import { armHttpTracing } from "../diagnostics/tracing.js";

/**
 * The name of the one policy a hedging client's `pipeline` holds (see
 * {@link createHedgingHttpClient}): name it in `afterPolicies` or
 * `beforePolicies` to place a policy of yours relative to the hedging.
 */
export const cosmosHedgingPolicyName = "cosmosHedgingPolicy";

/** The hedging client's own layer (see {@link hedgingLayer}): a pipeline policy, and the lazy way for the SDK's plain attempts. */
export interface HedgingLayer extends PipelinePolicy {
  /**
   * Sends a plain attempt of the SDK's (see {@link LayerRoute}) straight to
   * `transport`, lazily: the request goes out as it is, and nothing is kept
   * on it until a hedge is due. `undefined` when the attempt cannot go so (a
   * kind no handler takes lazily, a region of no account of the client's,
   * exclusions or a runtime order of the client's in force): nothing of it
   * has been done, and it goes the full way. `kind` is the request's, when
   * the SDK's request plugin knew it, and `endpoint` the one the SDK built
   * its URL from.
   */
  sendPlain(
    request: PipelineRequest,
    detection: OperationDetection | undefined,
    transport: SendRequest,
    kind?: OperationKind,
    endpoint?: string,
    sdkContext?: object,
  ): Promise<PipelineResponse> | undefined;
}

/**
 * The hedging client's own layer: the steering of `excludedRegionsPolicy`,
 * the hedging of `metadataHedgingPolicy` and `crossRegionHedgingPolicy`, the
 * detection record of each `@azure/cosmos` attempt and the HTTP spans of
 * traced arms, as one policy. Each request is classified and its controls
 * read once, and it crosses one layer instead of six; the policies used one
 * by one do the same work, each over the same composition.
 *
 * Every request the layer sends (the SDK's own, each hedge, a drained
 * loser) goes through the detection record and the arm tracing on its way
 * to the rest of the pipeline, so that a policy of the user's below this one
 * (a fault injector, a signer) sees exactly what the record notes.
 */
export function hedgingLayer(regions: RegionCache, steering: RequestStep, handlers: readonly RequestHandler[], sdkOptionsExpected = false): HedgingLayer {
  const send = composeHandlers(regions, [steering], handlers, sdkOptionsExpected);
  // The rest of the pipeline is the same function for every request of a client (it is composed once per order of
  // its policies), so its wrapper is made once for it too.
  let below: SendRequest | undefined;
  let belowTraced: SendRequest | undefined;
  const traced = (next: SendRequest): SendRequest => {
    if (next !== below || belowTraced === undefined) {
      below = next;
      belowTraced = armHttpTracing(next);
    }
    return belowTraced;
  };
  const endpointRegions = new EndpointRegions(regions);
  let route: LayerRoute | undefined;
  /** The route of plain attempts over `transport`: the same for every request of a client, so made once for it. */
  const routeOver = (transport: SendRequest): LayerRoute => {
    if (route?.send !== transport) {
      route = {
        send: transport,
        prepare(request, operation, detection, primarySent) {
          // What the client and the layer keep for a request the full way (see sendRequest below and the client's).
          adoptPlainSdkOptions(request);
          classifiedAs(request, operation);
          markForCoreTransport(request, true);
          if (detection !== undefined) noteHandedAttempt(request, detection);
          const arms = traced(transport);
          return detection === undefined ? arms : recordingSend({ operation: detection, sent: primarySent }, regions, arms);
        },
      };
    }
    return route;
  };
  return {
    name: cosmosHedgingPolicyName,
    sendRequest(request, next) {
      const attempt = linkAttempt(request);
      if (attempt === undefined) return send(request, traced(next));
      return send(request, recordingSend(attempt, regions, traced(next)));
    },
    sendPlain(request, detection, transport, kind, endpoint, sdkContext) {
      if (steering.leavesPlain?.(detection) !== true) return undefined;
      const operation = kind ?? classifyOperation(request);
      const addressed = endpoint === undefined ? regions.regionOf(request.url) : endpointRegions.of(endpoint);
      if (addressed === undefined) return undefined;
      for (const handler of handlers) {
        if (handler.kinds.has(operation)) return handler.sendLazily?.(request, operation, addressed, detection, routeOver(transport), sdkContext);
      }
      return undefined;
    },
  };
}
