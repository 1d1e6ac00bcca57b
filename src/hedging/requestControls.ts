import type { PipelineRequest } from "@azure/core-rest-pipeline";

/** Hedging choices made for one request (see `hedgingRequestOptions`). */
export interface RequestHedgingControls {
  /** Regions this request and its hedges must not go to. */
  readonly excludedRegions?: readonly string[];
  /** The one region this request must go to; it is not hedged. */
  readonly region?: string;
  /** `false`: no hedge for this request; an object: hedge it with these settings. */
  readonly hedging?: false | { readonly threshold?: number; readonly thresholdStep?: number };
}

const noControls: RequestHedgingControls = Object.freeze({});
const controlsByRequest = new WeakMap<PipelineRequest, RequestHedgingControls>();

/** Records the controls of a request, for the policies after this point in the pipeline. */
export function setRequestControls(request: PipelineRequest, controls: RequestHedgingControls): void {
  controlsByRequest.set(request, controls);
}

/** The controls of a request; empty when none were given. */
export function requestControlsOf(request: PipelineRequest): RequestHedgingControls {
  return controlsByRequest.get(request) ?? noControls;
}
