import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import type { HedgeDiagnostics } from "./diagnostics.js";
import type { RaceArm, RaceOutcome } from "../race/race.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import type { RequestHedgingControls } from "../request/requestModel.js";

/**
 * The part of a diagnostics record that a policy knows before it sends
 * anything. Each request gets its own, which becomes its record when it ends.
 */
export type DiagnosticsHeader = Pick<
  HedgeDiagnostics,
  | "policy"
  | "operation"
  | "thresholdMs"
  | "thresholdStepMs"
  | "thresholdSource"
  | "thresholdRegion"
  | "primaryRegion"
  | "routing"
  | "ranking"
>;

/**
 * The diagnostics header of a request: its policy, its operation, the region
 * it addresses and what routing did first. A fresh object per request, since
 * it becomes that request's record; fields are set rather than spread in, as
 * every request makes one.
 */
export function diagnosticsHeader(
  policy: HedgeDiagnostics["policy"],
  operation: HedgeDiagnostics["operation"],
  region: RegionEndpoint | undefined,
  controls: RequestHedgingControls,
): DiagnosticsHeader {
  const header: DiagnosticsHeader = { policy, operation };
  if (region !== undefined) header.primaryRegion = region.name;
  if (controls.routing !== undefined) header.routing = controls.routing;
  return header;
}

/**
 * A fresh copy of a header, for a request whose plan is shared (see the
 * plain plans of `crossRegionHedgingPolicy`): its fields set in the order a
 * header gets them, from the same literal, so that every record has one
 * shape (a spread copy, completed into a record, was eight times slower to
 * build).
 */
export function copyHeader(header: DiagnosticsHeader): DiagnosticsHeader {
  const copy: DiagnosticsHeader = { policy: header.policy, operation: header.operation };
  if (header.primaryRegion !== undefined) copy.primaryRegion = header.primaryRegion;
  if (header.routing !== undefined) copy.routing = header.routing;
  if (header.thresholdMs !== undefined) copy.thresholdMs = header.thresholdMs;
  if (header.thresholdStepMs !== undefined) copy.thresholdStepMs = header.thresholdStepMs;
  if (header.thresholdSource !== undefined) copy.thresholdSource = header.thresholdSource;
  if (header.thresholdRegion !== undefined) copy.thresholdRegion = header.thresholdRegion;
  if (header.ranking !== undefined) copy.ranking = header.ranking;
  return copy;
}

/**
 * What learns from the raw outcome of each request (region health): never
 * from the public record, which is redacted and rounded for people.
 */
export interface RaceLearner {
  /** Told of each response a region gave, as it arrives; a property, safe to hand on unbound. */
  readonly noteResponse: (region: string | undefined, response: PipelineResponse) => void;
  /** A request sent unhedged, once it has ended; `region` is the one it went to, when known, and `failure` how it failed without an answer. */
  learnSkipped(region: string | undefined, failure?: ArmResult): void;
  /** A race once it is decided or aborted, with what was planned for it; `request` is the one the race was run for (the SDK's). */
  learn(header: DiagnosticsHeader, outcome: RaceOutcome, request?: PipelineRequest): void;
  /** A drained loser once its drain has ended. */
  learnDrained(operation: OperationKind, arm: RaceArm): void;
}
