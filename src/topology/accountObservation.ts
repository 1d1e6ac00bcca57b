import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "./regionCache.js";

/**
 * Sends a database-account read and lets the region cache learn from it.
 * Every policy of this package does this for the account reads that pass
 * through it, so a policy used alone still knows the account's regions.
 */
export async function sendObservingAccount(
  regions: RegionCache,
  request: PipelineRequest,
  next: SendRequest,
): Promise<PipelineResponse> {
  const response = await next(request);
  regions.observe(request, response);
  return response;
}
