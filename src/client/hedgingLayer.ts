import type { PipelinePolicy, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import type { RequestHandler, RequestStep } from "../policies/requestHandler.js";
import { composeHandlers } from "../policies/requestHandler.js";
import { linkAttempt, recordingSend } from "../diagnostics/dispatchRecording.js";
import { armHttpTracing } from "../diagnostics/tracing.js";

/**
 * The name of the one policy a hedging client's `pipeline` holds (see
 * {@link createHedgingHttpClient}): name it in `afterPolicies` or
 * `beforePolicies` to place a policy of yours relative to the hedging.
 */
export const cosmosHedgingPolicyName = "cosmosHedgingPolicy";

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
export function hedgingLayer(regions: RegionCache, steering: RequestStep, handlers: readonly RequestHandler[], sdkOptionsExpected = false): PipelinePolicy {
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
  return {
    name: cosmosHedgingPolicyName,
    sendRequest(request, next) {
      const attempt = linkAttempt(request);
      if (attempt === undefined) return send(request, traced(next));
      return send(request, recordingSend(attempt, regions, traced(next)));
    },
  };
}
