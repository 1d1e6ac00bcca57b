/**
 * Cross-region request hedging for Azure Cosmos DB clients, as
 * `@azure/core-rest-pipeline` policies.
 *
 * @packageDocumentation
 */

export { RegionCache } from "./topology/regionCache.js";
export type {
  AccountTopology,
  AccountTopologyInit,
  RegionAccess,
  RegionCacheOptions,
  RegionDemotion,
  RegionEndpoint,
} from "./topology/regionCache.js";
export type { LatencyClass, LatencySummary } from "./learning/latencyWindows.js";
export { demotionDefaults } from "./learning/regionRanking.js";
export type { RegionRouting } from "./learning/regionRanking.js";
export { adaptiveThresholdDefaults } from "./planning/adaptiveThreshold.js";
export type { AdaptiveThresholdOptions } from "./planning/adaptiveThreshold.js";
export { loadBudgetDefaults } from "./budget/loadBudget.js";
export type { HedgeLoadBudgetOptions } from "./budget/loadBudget.js";
export { loserDrainDefaults } from "./race/loserDrain.js";
export type { LoserDrainOptions } from "./race/loserDrain.js";
export type { HedgingMetrics, RegionHedgingMetrics } from "./diagnostics/metrics.js";
export { classifyOperation } from "./cosmos/operationKind.js";
export type { OperationKind } from "./cosmos/operationKind.js";
export { hedgeDiagnosticsHeaderName } from "./cosmos/headers.js";
export { masterKeySigner } from "./cosmos/masterKeySigner.js";
export type { RequestSigner } from "./cosmos/masterKeySigner.js";
export { getHedgeDiagnostics } from "./diagnostics/diagnostics.js";
export { getHedgingDetection } from "./diagnostics/detection.js";
export type { HedgingDetection, RequestedRegion, RequestedRegionReason } from "./diagnostics/detection.js";
export { whenFinal } from "./diagnostics/final.js";
export { hedgingMetricAttributes, hedgingMetricNames } from "./diagnostics/otelMetrics.js";
export { collectHedgeDiagnostics, getCollectedHedgeDiagnostics } from "./diagnostics/diagnosticsCollector.js";
export type { CollectedHedgeDiagnostics } from "./diagnostics/diagnosticsCollector.js";
export type {
  HedgeArmDiagnostics,
  HedgeArmError,
  HedgeArmOutcome,
  HedgeArmReason,
  HedgeDiagnostics,
  HedgeDrainEnd,
  HedgePolicyKind,
  HedgeRanking,
  HedgeRankingReason,
  HedgeSkipReason,
  HedgeTerminalState,
} from "./diagnostics/diagnostics.js";
export {
  crossRegionHedgingDefaults,
  crossRegionHedgingPolicy,
  crossRegionHedgingPolicyName,
} from "./policies/crossRegionHedgingPolicy.js";
export type { CrossRegionHedgingPolicy, CrossRegionHedgingPolicyOptions } from "./policies/crossRegionHedgingPolicy.js";
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
export { cosmosHedgingPolicyName } from "./client/hedgingLayer.js";
export type { HedgeableCosmosClientOptions } from "./client/withHedging.js";
export { excludedRegionsPolicy, excludedRegionsPolicyName } from "./policies/excludedRegionsPolicy.js";
export type { ExcludedRegionsPolicyOptions } from "./policies/excludedRegionsPolicy.js";
export { hedgingRequestOptions, withRequestHedgingOptions } from "./client/requestOptions.js";
export type { HedgingRequestOptionsResult, InitialHeaders, RequestHedgingOptions } from "./client/requestOptions.js";
export type { RequestRouting, RerouteReason } from "./request/requestModel.js";
