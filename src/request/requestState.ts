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
  /** The request the layer sends in its place: a re-pointed copy of a request a policy of the caller's froze (see `regionSteering`). */
  sentAs: PipelineRequest | undefined;
}

/** A class rather than literals, so that every state has one shape. */
class State implements RequestState {
  controls: RequestHedgingControls | undefined = undefined;
  kind: OperationKind | undefined = undefined;
  toCoreTransport = false;
  operation: OperationDetection | undefined = undefined;
  traced = false;
  sentAs: PipelineRequest | undefined = undefined;

  constructor(readonly owner: PipelineRequest) {}
}

/** The property that holds a request's state; not enumerable by `Object.keys`, `for...in` or `JSON.stringify`. */
const stateKey = Symbol("cosmos-hedging request state");

/**
 * The states kept off the request: of requests that take no new property
 * (frozen, sealed), of requests whose state was frozen with them, and of
 * copies that carry their original's state (writing theirs would replace
 * the original's, through a `Proxy`).
 */
const statesOffRequests = new WeakMap<PipelineRequest, RequestState>();

function held(request: PipelineRequest): RequestState | undefined {
  const property = (request as unknown as Record<symbol, RequestState | undefined>)[stateKey];
  const own = property?.owner === request ? property : undefined;
  // A state frozen with the request (a caller's deep freeze of what it holds) takes no more writes: a copy of it does.
  if (own !== undefined && Object.isExtensible(own)) return own;
  if (property === undefined && Object.isExtensible(request)) return undefined;
  let off = statesOffRequests.get(request);
  if (off === undefined && own !== undefined) {
    off = Object.assign(new State(request), own);
    statesOffRequests.set(request, off);
  }
  return off;
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
  const holder = request as unknown as Record<symbol, RequestState | undefined>;
  if (Object.isExtensible(request) && holder[stateKey] === undefined) holder[stateKey] = state;
  else statesOffRequests.set(request, state);
  return state;
}

/**
 * The state a copy of a request carries from its original (an object
 * spread, `Object.assign` or a `Proxy` of it keeps the property), which is
 * the original's and not the copy's own: `undefined` for a request with a
 * state of its own, or none.
 */
export function carriedStateOf(request: PipelineRequest): RequestState | undefined {
  const carried = (request as unknown as Record<symbol, RequestState | undefined>)[stateKey];
  return carried !== undefined && carried.owner !== request ? carried : undefined;
}

/** Sends `copy` in `request`'s place from here on, as an attempt of the same operation. */
export function sendInstead(request: PipelineRequest, copy: PipelineRequest): void {
  const state = requestStateOf(request);
  state.sentAs = copy;
  requestStateOf(copy).operation = state.operation;
}

/** The request the layer sends in `request`'s place (see {@link sendInstead}), or `request` itself. */
export function outgoingOf(request: PipelineRequest): PipelineRequest {
  return stateIfAny(request)?.sentAs ?? request;
}

/** Keeps a request's {@link OperationKind} as classified already by its sender, for {@link operationOf}. */
export function classifiedAs(request: PipelineRequest, kind: OperationKind): void {
  requestStateOf(request).kind = kind;
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
