import type { PipelineRequest } from "@azure/core-rest-pipeline";
import type { OperationKind } from "../cosmos/operationKind.js";
import { classifyOperation } from "../cosmos/operationKind.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import type { RequestHedgingControls } from "./requestModel.js";

/**
 * Everything this package keeps for one request while it crosses the
 * hedging client and its policies, in one object on the request: one
 * property store and one object a request, however many of these each
 * request needs, and one place to look when following a request.
 *
 * Each field is written by the module that owns it, through that module's
 * functions (`requestControlsOf`, `operationOf`, `markForCoreTransport`,
 * `noteHandedAttempt`, the race's tracing); nothing reads another module's
 * field directly.
 */
export interface RequestState {
  /**
   * The request the state belongs to. An object spread or `Object.assign`
   * of the request copies the property that holds the state, but a copy
   * changed on its way (another method or URL) must not answer for the
   * original, so a state only counts on its owner.
   */
  readonly owner: PipelineRequest;
  /** The request's hedging controls, once read (see `requestControlsOf`). */
  controls: RequestHedgingControls | undefined;
  /** What the request does, once classified (see {@link operationOf}). */
  kind: OperationKind | undefined;
  /** Whether its arms go straight to core-rest-pipeline's own transport (see `markForCoreTransport`). */
  toCoreTransport: boolean;
  /** The `@azure/cosmos` operation the request is an attempt of, handed over or linked by its header (see `linkAttempt`). */
  operation: OperationDetection | undefined;
  /** Whether it is an arm of a race being traced, which gets an HTTP span (see `armHttpTracing`). */
  traced: boolean;
}

/** A class rather than literals, so that every state has one shape. */
class State implements RequestState {
  controls: RequestHedgingControls | undefined = undefined;
  kind: OperationKind | undefined = undefined;
  toCoreTransport = false;
  operation: OperationDetection | undefined = undefined;
  traced = false;

  constructor(readonly owner: PipelineRequest) {}
}

/** The property that holds a request's state; not enumerable by `Object.keys`, `for...in` or `JSON.stringify`. */
const stateKey = Symbol("cosmos-hedging request state");

/** The states of requests that take no new property (frozen, sealed), or whose state was frozen with them. */
const statesOfClosedRequests = new WeakMap<PipelineRequest, RequestState>();

function held(request: PipelineRequest): RequestState | undefined {
  const own = (request as unknown as Record<symbol, RequestState | undefined>)[stateKey];
  const state = own?.owner === request ? own : undefined;
  // A state frozen with the request (a caller's deep freeze of what it holds) takes no more writes: a copy of it does.
  if (state !== undefined && Object.isExtensible(state)) return state;
  if (state === undefined && Object.isExtensible(request)) return undefined;
  let closed = statesOfClosedRequests.get(request);
  if (closed === undefined && state !== undefined) {
    closed = Object.assign(new State(request), state);
    statesOfClosedRequests.set(request, closed);
  }
  return closed;
}

/** The request's state, or `undefined` when nothing has been kept for it yet. */
export function stateIfAny(request: PipelineRequest): RequestState | undefined {
  return held(request);
}

/** The request's state, made empty when nothing has been kept for it yet. */
export function requestStateOf(request: PipelineRequest): RequestState {
  const known = held(request);
  if (known !== undefined) return known;
  const state = new State(request);
  if (Object.isExtensible(request)) (request as unknown as Record<symbol, RequestState>)[stateKey] = state;
  else statesOfClosedRequests.set(request, state);
  return state;
}

/**
 * The {@link OperationKind} of a request, classified once per request
 * object: every policy of a client asks, and none of them changes what
 * decides it (the method, the path, the wire headers).
 */
export function operationOf(request: PipelineRequest): OperationKind {
  const state = requestStateOf(request);
  return (state.kind ??= classifyOperation(request));
}
