import type { Pipeline, PipelinePolicy } from "@azure/core-rest-pipeline";
import { crossRegionHedgingPolicyName } from "../policies/crossRegionHedgingPolicy.js";
import { metadataHedgingPolicyName } from "../policies/metadataHedgingPolicy.js";
import { cosmosHedgingPolicyName } from "./hedgingLayer.js";

/**
 * The names of the policies a hedging client's pipeline held before they
 * became one layer. core-rest-pipeline ignores a name it does not know in
 * `afterPolicies`, `beforePolicies` and `removePolicy`, so code written for
 * them would go on silently doing something else.
 */
const retiredPolicyNames: ReadonlySet<string> = new Set([
  "operationLinkPolicy",
  "excludedRegionsPolicy",
  metadataHedgingPolicyName,
  crossRegionHedgingPolicyName,
  "armHttpTracingPolicy",
  "dispatchRecordPolicy",
]);

/** Policies that race what they send: one below the hedging layer would race every arm of its races again. */
const racingPolicyNames: ReadonlySet<string> = new Set([crossRegionHedgingPolicyName, metadataHedgingPolicyName]);

function refuseRetired(option: string, names: readonly string[] | undefined): void {
  for (const name of names ?? []) {
    if (retiredPolicyNames.has(name)) {
      throw new TypeError(
        `${option} names ${JSON.stringify(name)}, which a hedging client's pipeline no longer holds: its policies are one layer, ${JSON.stringify(cosmosHedgingPolicyName)}; name that instead.`,
      );
    }
  }
}

/**
 * A hedging client's `pipeline`: core-rest-pipeline's, refusing before
 * anything changes what would silently misbehave: a policy placed or
 * removed by a name the pipeline no longer holds, and a second hedging
 * policy, which would nest a race inside every arm of the layer's.
 */
export function hedgingPipeline(pipeline: Pipeline): Pipeline {
  return {
    addPolicy(policy: PipelinePolicy, options: Parameters<Pipeline["addPolicy"]>[1] = {}): void {
      if (racingPolicyNames.has(policy.name)) {
        throw new TypeError(
          `A ${JSON.stringify(policy.name)} cannot be added to a hedging client's pipeline: its ${JSON.stringify(cosmosHedgingPolicyName)} already hedges, and a second one would hedge every hedge again.`,
        );
      }
      refuseRetired("afterPolicies", options.afterPolicies);
      refuseRetired("beforePolicies", options.beforePolicies);
      pipeline.addPolicy(policy, options);
    },
    removePolicy(options: Parameters<Pipeline["removePolicy"]>[0]): PipelinePolicy[] {
      if (options.name !== undefined) refuseRetired("removePolicy's name", [options.name]);
      return pipeline.removePolicy(options);
    },
    sendRequest: (httpClient, request) => pipeline.sendRequest(httpClient, request),
    getOrderedPolicies: () => pipeline.getOrderedPolicies(),
    clone: () => pipeline.clone(),
  };
}
