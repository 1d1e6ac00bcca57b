import { crossRegionDefaultThresholdMs, crossRegionHedgingDefaults } from "../policies/crossRegionHedgingPolicy.js";
import { metadataDefaultThresholdMs, metadataHedgingDefaults } from "../policies/metadataHedgingPolicy.js";

/**
 * What the summary reads of a hedging client's options: their shape,
 * declared here so that the client, which logs the line, and this file,
 * which words it, do not import each other.
 */
interface SummarizedOptions {
  readonly crossRegion?: boolean | "followAccount" | { readonly threshold?: unknown; readonly thresholdStep?: number; readonly enableMultiWriteRegionHedge?: boolean };
  readonly metadata?: boolean | "followAccount" | { readonly threshold?: number };
  readonly requestTimeout?: number;
}

function crossRegionSummary(setting: SummarizedOptions["crossRegion"], requestTimeout: number): string {
  if (setting === false) return "data-plane hedging off";
  if (setting === "followAccount") return "data-plane reads hedged while the account reports per-partition automatic failover";
  const settings = typeof setting === "object" ? setting : {};
  const threshold =
    typeof settings.threshold === "number"
      ? `after ${settings.threshold} ms`
      : settings.threshold !== undefined
        ? "after an adaptive threshold"
        : `after ${crossRegionDefaultThresholdMs(requestTimeout)} ms`;
  const step = settings.thresholdStep ?? crossRegionHedgingDefaults.thresholdStep;
  const writes = settings.enableMultiWriteRegionHedge === true ? ", writes too on multi-write accounts" : "";
  return `data-plane reads hedged ${threshold}, then every ${step} ms${writes}`;
}

function metadataSummary(setting: SummarizedOptions["metadata"], requestTimeout: number): string {
  if (setting === false) return "metadata hedging off";
  if (setting === "followAccount") return "metadata reads hedged while the account reports per-partition automatic failover";
  const threshold =
    typeof setting === "object" && setting.threshold !== undefined ? setting.threshold : metadataDefaultThresholdMs(requestTimeout);
  return `metadata reads hedged after ${threshold} ms`;
}

/**
 * One line that says what a new hedging client will hedge, logged at
 * `info` when it is created: the first thing to look for when asking
 * whether hedging is on.
 */
export function hedgingClientSummary(options: SummarizedOptions): string {
  const requestTimeout = options.requestTimeout ?? metadataHedgingDefaults.requestTimeout;
  return `Hedging client created: ${crossRegionSummary(options.crossRegion, requestTimeout)}; ${metadataSummary(options.metadata, requestTimeout)}.`;
}
