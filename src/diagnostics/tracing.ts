import { createTracingClient } from "@azure/core-tracing";
import type { TracingContext, TracingSpan } from "@azure/core-tracing";
import { tracingPolicy } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import { requestChargeOf, subStatusOf } from "../cosmos/statusTables.js";
import { packageInfo } from "../packageInfo.js";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { HedgeArmReason, HedgeDiagnostics } from "./diagnostics.js";
import type { DiagnosticsHeader } from "./diagnosticsHeader.js";
import type { RaceArm } from "../race/race.js";
import { redactCredentials } from "./redact.js";
import { requestStateOf, stateIfAny } from "../request/requestState.js";

/**
 * The tracing client of the package. Spans go to whatever instrumenter
 * `@azure/core-tracing` has (`@azure/opentelemetry-instrumentation-azure-sdk`
 * or the Azure Monitor distro install the OpenTelemetry one); with none, they
 * cost a no-op object each.
 */
const tracingClient = createTracingClient({
  namespace: "Microsoft.DocumentDB",
  packageName: packageInfo.name,
  packageVersion: packageInfo.version,
});

/** The attribute names of the spans, under `cosmos.hedging.`. */
export const spanAttributes = {
  policy: "cosmos.hedging.policy",
  operation: "cosmos.hedging.operation",
  thresholdMs: "cosmos.hedging.threshold_ms",
  thresholdStepMs: "cosmos.hedging.threshold_step_ms",
  thresholdSource: "cosmos.hedging.threshold_source",
  primaryRegion: "cosmos.hedging.primary_region",
  winningRegion: "cosmos.hedging.winning_region",
  hedgeFired: "cosmos.hedging.hedge_fired",
  hedgeWon: "cosmos.hedging.hedge_won",
  terminalState: "cosmos.hedging.terminal_state",
  skipReason: "cosmos.hedging.skip_reason",
  arms: "cosmos.hedging.arms",
  requestCharge: "cosmos.hedging.request_charge",
  statusCode: "cosmos.hedging.status_code",
  armIndex: "cosmos.hedging.arm.index",
  armRegion: "cosmos.hedging.arm.region",
  armReason: "cosmos.hedging.arm.reason",
  armStatusCode: "cosmos.hedging.arm.status_code",
  armSubStatus: "cosmos.hedging.arm.sub_status",
  armRequestCharge: "cosmos.hedging.arm.request_charge",
  armCancelled: "cosmos.hedging.arm.cancelled",
} as const;

/**
 * core-rest-pipeline's `tracingPolicy` over `next`, for the arms of traced
 * races only: each gets an HTTP span with the Azure SDK's conventions, under
 * its arm's span. Any other request goes straight to `next`, so that a
 * client nobody traces pays one property read per request, not a span.
 */
export function armHttpTracing(next: SendRequest): SendRequest {
  const tracing = (armTracing ??= tracingPolicy());
  return (request) => (stateIfAny(request)?.traced === true ? tracing.sendRequest(request, next) : next(request));
}

let armTracing: PipelinePolicy | undefined;

/** The span of one race and the spans of its arms. */
export interface RaceTrace {
  /** Sends one hedge through `send` in a child span of the race, and so its HTTP span below. */
  sendArm(
    send: (request: PipelineRequest) => Promise<PipelineResponse>,
    request: PipelineRequest,
    index: number,
    region: RegionEndpoint,
    reason: HedgeArmReason,
  ): Promise<PipelineResponse>;
  /**
   * Opens the span of the primary, already in flight when the race's span
   * starts: the caller's request is not re-sent or re-wrapped, so its span
   * starts with the race's and has no HTTP span of ours below it.
   */
  openPrimary(region: RegionEndpoint): void;
  /** Ends the primary's span with what it got: at the decision, or when its drain ends. */
  closePrimary(arm: RaceArm): void;
  /** Ends the race span with what the caller gets: the diagnostics, and the error when one is thrown. */
  end(diagnostics: HedgeDiagnostics | undefined, response: PipelineResponse | undefined, error?: unknown): void;
}

const untraced: RaceTrace = {
  sendArm: (send, request) => send(request),
  openPrimary: () => undefined,
  closePrimary: () => undefined,
  end: () => undefined,
};

/** Sets an arm span's attributes from the response it got. */
function setResponse(armSpan: TracingSpan, response: PipelineResponse): void {
  armSpan.setAttribute(spanAttributes.armStatusCode, response.status);
  const subStatus = subStatusOf(response);
  if (subStatus !== 0) armSpan.setAttribute(spanAttributes.armSubStatus, subStatus);
  setIfDefined(armSpan, spanAttributes.armRequestCharge, requestChargeOf(response));
}

/** An error as a span may show it: its name and message, without credentials. */
function errorText(error: unknown): string {
  if (error instanceof Error) return redactCredentials(`${error.name}: ${error.message}`).slice(0, 300);
  return redactCredentials(String(error)).slice(0, 300);
}

function setIfDefined(span: TracingSpan, name: string, value: string | number | boolean | undefined): void {
  if (value !== undefined) span.setAttribute(name, value);
}

/**
 * Starts the span of a race when its first hedge is due (a request that
 * never hedges gets none), as a child of the request's tracing context
 * (set by core-client callers) or else of the caller's active context, the
 * way Azure SDK clients start theirs. Attributes hold only what the
 * diagnostics hold: no header value, URL or credential.
 */
export function startRaceTrace(request: PipelineRequest, header: DiagnosticsHeader): RaceTrace {
  const { span, updatedOptions } = tracingClient.startSpan(
    `hedge ${header.operation}`,
    { tracingOptions: request.tracingOptions ?? {} },
    { spanKind: "internal" },
  );
  if (!span.isRecording()) {
    span.end();
    return untraced;
  }
  const raceContext: TracingContext | undefined = updatedOptions.tracingOptions.tracingContext;
  span.setAttribute(spanAttributes.policy, header.policy);
  span.setAttribute(spanAttributes.operation, header.operation);
  setIfDefined(span, spanAttributes.thresholdStepMs, header.thresholdStepMs);
  setIfDefined(span, spanAttributes.thresholdSource, header.thresholdSource);
  setIfDefined(span, spanAttributes.thresholdMs, header.thresholdMs);
  setIfDefined(span, spanAttributes.primaryRegion, header.primaryRegion);

  const startArmSpan = (index: number, region: RegionEndpoint, reason: HedgeArmReason) => {
    const started = tracingClient.startSpan(`hedge ${header.operation} arm`, { tracingOptions: { tracingContext: raceContext } }, { spanKind: "internal" });
    started.span.setAttribute(spanAttributes.armIndex, index);
    started.span.setAttribute(spanAttributes.armRegion, region.name);
    started.span.setAttribute(spanAttributes.armReason, reason);
    return started;
  };

  let primarySpan: TracingSpan | undefined;
  const openPrimary = (region: RegionEndpoint): void => {
    primarySpan = startArmSpan(0, region, "primary").span;
  };
  const closePrimary = (arm: RaceArm): void => {
    const armSpan = primarySpan;
    if (armSpan === undefined) return;
    primarySpan = undefined;
    const result = arm.result ?? arm.drain?.result;
    if (result?.response !== undefined) setResponse(armSpan, result.response);
    else if (arm.aborted === true || (arm.drain !== undefined && arm.drain.end !== "settled")) armSpan.setAttribute(spanAttributes.armCancelled, true);
    else if (result !== undefined) armSpan.setStatus({ status: "error", error: errorText(result.error) });
    armSpan.end();
  };

  const sendArm: RaceTrace["sendArm"] = async (send, armRequest, index, region, reason) => {
    const { span: armSpan, updatedOptions: armOptions } = startArmSpan(index, region, reason);
    const armContext = armOptions.tracingOptions.tracingContext;
    // The HTTP span of the arm (armHttpTracing, below the race) is a child of the arm's span.
    armRequest.tracingOptions = { ...armRequest.tracingOptions, tracingContext: armContext };
    requestStateOf(armRequest).traced = true;
    try {
      const response = await tracingClient.withContext(armContext, send, armRequest);
      setResponse(armSpan, response);
      return response;
    } catch (error) {
      // An arm the race cancelled did nothing wrong; only an arm that failed by itself is an error.
      if (armRequest.abortSignal?.aborted === true) armSpan.setAttribute(spanAttributes.armCancelled, true);
      else armSpan.setStatus({ status: "error", error: errorText(error) });
      throw error;
    } finally {
      armSpan.end();
    }
  };

  const end = (diagnostics: HedgeDiagnostics | undefined, response: PipelineResponse | undefined, error?: unknown): void => {
    if (diagnostics !== undefined) {
      setIfDefined(span, spanAttributes.winningRegion, diagnostics.winningRegion);
      span.setAttribute(spanAttributes.hedgeFired, diagnostics.hedgeFired);
      span.setAttribute(spanAttributes.hedgeWon, diagnostics.hedgeWon);
      span.setAttribute(spanAttributes.terminalState, diagnostics.terminalState);
      setIfDefined(span, spanAttributes.skipReason, diagnostics.skipReason);
      span.setAttribute(spanAttributes.arms, diagnostics.arms.length);
      span.setAttribute(spanAttributes.requestCharge, diagnostics.totalRequestCharge);
    }
    if (response !== undefined) span.setAttribute(spanAttributes.statusCode, response.status);
    if (error !== undefined) span.setStatus({ status: "error", error: errorText(error) });
    else span.setStatus({ status: "success" });
    span.end();
  };

  return { sendArm, openPrimary, closePrimary, end };
}
