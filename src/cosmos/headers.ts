import { randomUUID } from "node:crypto";
import type { PipelineRequest } from "@azure/core-rest-pipeline";

/**
 * Header names of the Cosmos DB wire protocol that this package reads, and the
 * headers it adds itself. Lower case, as `HttpHeaders` normalizes them.
 */
export const CosmosHeaders = {
  authorization: "authorization",
  date: "x-ms-date",
  isQuery: "x-ms-documentdb-isquery",
  isQueryPlan: "x-ms-cosmos-is-query-plan-request",
  isBatch: "x-ms-cosmos-is-batch-request",
  isUpsert: "x-ms-documentdb-is-upsert",
  aIm: "a-im",
  ifMatch: "if-match",
  ifNoneMatch: "if-none-match",
  continuation: "x-ms-continuation",
  contentType: "content-type",
  subStatus: "x-ms-substatus",
  activityId: "x-ms-activity-id",
  requestCharge: "x-ms-request-charge",
  sessionToken: "x-ms-session-token",
  retryAfterMs: "x-ms-retry-after-ms",
} as const;

/** What the name of every header of this package's starts with: the diagnostics header and every control header. */
export const packageHeaderPrefix = "x-cosmos-hedging";

/** Whether a header name is one of this package's, in any case. */
export function isPackageHeaderName(name: string): boolean {
  return name.length >= packageHeaderPrefix.length && name.slice(0, packageHeaderPrefix.length).toLowerCase() === packageHeaderPrefix;
}

/** Removes every header of this package's from a request: none may reach the service. */
export function removePackageHeaders(request: PipelineRequest): void {
  const names: string[] = [];
  for (const [name] of request.headers) if (isPackageHeaderName(name)) names.push(name);
  for (const name of names) request.headers.delete(name);
}

/** The response header in which the hedging policies return their diagnostics as JSON. */
export const hedgeDiagnosticsHeaderName = "x-cosmos-hedging-diagnostics";

/**
 * The request headers that carry per-request controls from `@azure/cosmos`'s
 * `initialHeaders` to the policies. The first policy of this package to see
 * a request removes them, so they never leave the process.
 * `excludedRegions` and `region` are JSON (a string array, a string) with
 * every non-ASCII character escaped; `hedging` is `off` or a JSON object
 * `{"threshold":…,"thresholdStep":…}`.
 */
export const requestControlHeaders = {
  excludedRegions: "x-cosmos-hedging-excluded-regions",
  region: "x-cosmos-hedging-region",
  hedging: "x-cosmos-hedging",
  /** Written by the `@azure/cosmos` request plugin: the SDK request's `excludedLocations`, a JSON array (possibly empty). */
  sdkExcludedRegions: "x-cosmos-hedging-sdk-excluded-regions",
  /** Written by the `@azure/cosmos` request plugin on a retry only: how many attempts of the request the SDK made before this one. */
  sdkRetry: "x-cosmos-hedging-sdk-retry",
} as const;

/**
 * What the request plugin writes in {@link requestControlHeaders}.sdkExcludedRegions
 * instead of the SDK's `excludedLocations` when they break the region-name
 * rule, so that a list of any size costs one bounded check, not its
 * serialization and parsing, before the request is sent unhedged. No JSON
 * array reads like them.
 */
export const sdkExclusionsRefused = {
  tooMany: "refused: too many",
  notRegionNames: "refused: not region names",
} as const;

/** The value of the {@link requestControlHeaders}.hedging header that turns hedging off. */
export const hedgingOffHeaderValue = "off";

/**
 * A value of this process's that no caller knows: every header the
 * `@azure/cosmos` request plugin writes starts with it, so that a header of
 * the same name a caller wrote (in `initialHeaders`) cannot pass for the
 * plugin's and lift the SDK's own exclusions. Not a credential: it only
 * tells this package's headers from others, and never leaves the process.
 */
const pluginHeaderToken = randomUUID();

/** A value the request plugin writes in one of its headers. */
export function pluginHeaderValue(value: string): string {
  return `${pluginHeaderToken} ${value}`;
}

/** What the request plugin wrote in one of its headers, or `undefined` for a value it did not write. */
export function fromPluginHeader(text: string): string | undefined {
  return text.length > pluginHeaderToken.length && text.startsWith(pluginHeaderToken) && text.charCodeAt(pluginHeaderToken.length) === 32
    ? text.slice(pluginHeaderToken.length + 1)
    : undefined;
}
