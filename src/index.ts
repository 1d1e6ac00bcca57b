/**
 * Cross-region request hedging for Azure Cosmos DB clients, as
 * `@azure/core-rest-pipeline` policies.
 *
 * @packageDocumentation
 */

export { RegionCache } from "./caches/regionCache.js";
export type {
  AccountTopology,
  AccountTopologyInit,
  RegionAccess,
  RegionCacheOptions,
  RegionEndpoint,
} from "./caches/regionCache.js";
export { classifyOperation } from "./cosmos/operationKind.js";
export type { OperationKind } from "./cosmos/operationKind.js";
export { hedgeDiagnosticsHeaderName } from "./cosmos/headers.js";
export { masterKeySigner } from "./cosmos/masterKeySigner.js";
export type { RequestSigner } from "./cosmos/masterKeySigner.js";
export { getHedgeDiagnostics } from "./hedging/diagnostics.js";
export type {
  HedgeArmDiagnostics,
  HedgeArmError,
  HedgeArmOutcome,
  HedgeArmReason,
  HedgeDiagnostics,
  HedgePolicyKind,
  HedgeSkipReason,
  HedgeTerminalState,
} from "./hedging/diagnostics.js";
export {
  crossRegionHedgingDefaults,
  crossRegionHedgingPolicy,
  crossRegionHedgingPolicyName,
} from "./policies/crossRegionHedgingPolicy.js";
export type { CrossRegionHedgingPolicyOptions } from "./policies/crossRegionHedgingPolicy.js";
export {
  metadataHedgingDefaults,
  metadataHedgingPolicy,
  metadataHedgingPolicyName,
} from "./policies/metadataHedgingPolicy.js";
export type { MetadataHedgingPolicyOptions } from "./policies/metadataHedgingPolicy.js";
export { createHedgingHttpClient } from "./client/hedgingHttpClient.js";
export type {
  CrossRegionHedgingOptions,
  HedgingHttpClient,
  HedgingHttpClientOptions,
  HedgingOptions,
  MetadataHedgingOptions,
} from "./client/hedgingHttpClient.js";
export { withHedging } from "./client/withHedging.js";
export { excludedRegionsPolicy, excludedRegionsPolicyName } from "./policies/excludedRegionsPolicy.js";
export type { ExcludedRegionsPolicyOptions } from "./policies/excludedRegionsPolicy.js";
export { hedgingRequestOptions, withRequestHedgingOptions } from "./client/requestOptions.js";
export type { HedgingRequestOptionsResult, InitialHeaders, RequestHedgingOptions } from "./client/requestOptions.js";
export type { RequestRouting, RerouteReason } from "./hedging/requestControls.js";
export { faultInjectionPolicy, faultInjectionPolicyName } from "./policies/faultInjectionPolicy.js";
export type {
  FaultInjectionPolicy,
  FaultInjectionPolicyOptions,
  FaultResult,
  FaultRule,
  FaultRuleHandle,
} from "./policies/faultInjectionPolicy.js";
