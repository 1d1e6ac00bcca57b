import type { AbortSignalLike } from "@azure/abort-controller";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { logger } from "../log.js";
import { requestStateOf, stateIfAny } from "../request/requestState.js";

/** How the race cancels one arm: `signal` goes on the arm's request, `abort()` fires it. */
export interface ArmAbort {
  readonly signal: AbortSignalLike;
  abort(): void;
}

type AbortEvent = { readonly type: "abort"; readonly target: AbortSignalLike };
type AbortListener = ((this: AbortSignalLike, event: AbortEvent) => unknown) | { handleEvent(event: AbortEvent): unknown };

/**
 * A plain `AbortSignalLike`, for arms that go straight to core-rest-pipeline's
 * own transport, which reads nothing else of a signal (it listens for
 * "abort" and aborts a native controller of its own). A native
 * `AbortController` costs about as much as the rest of a race that never
 * hedges on Node.js 20, and the transport's listener on it as much again.
 * Listeners behave as on an `EventTarget`: each is added once, and they run
 * synchronously, in order, when the arm is aborted (so at most once, and
 * `once` needs nothing more); one that throws is logged and the others
 * still run.
 */
class LightArmAbort implements ArmAbort, AbortSignalLike {
  aborted = false;
  private listeners: AbortListener[] | undefined;

  get signal(): AbortSignalLike {
    return this;
  }

  addEventListener(type: "abort", listener: AbortListener): void {
    if (type !== "abort" || this.aborted || (typeof listener !== "function" && typeof listener?.handleEvent !== "function")) return;
    this.listeners ??= [];
    if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(type: "abort", listener: AbortListener): void {
    const at = type === "abort" && this.listeners !== undefined ? this.listeners.indexOf(listener) : -1;
    if (at !== -1) this.listeners?.splice(at, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    const event: AbortEvent = { type: "abort", target: this };
    for (const listener of listeners) {
      try {
        if (typeof listener === "function") listener.call(this, event);
        else listener.handleEvent(event);
      } catch (error) {
        logger.warning(`An abort listener of a hedge arm threw and was ignored: ${error instanceof Error ? error.name : typeof error}`);
      }
    }
  }
}

/**
 * Marks whether a request's arms go from the race straight to
 * core-rest-pipeline's own transport (a hedging client over its default
 * transport, with no policy of the user's anywhere in its pipeline); only
 * their arms get a light signal. A transport or policy of the user's may
 * hand the signal to an API that takes only a native one (`fetch` does), so
 * every other arm gets a native `AbortController`. A request can come again
 * (a retry policy re-sends one object, or another client gets it) by
 * another route, so a mark is cleared as well as set.
 */
export function markForCoreTransport(request: PipelineRequest, reachesCoreTransport: boolean): void {
  // Only a request with a state of its own, or a mark to set, needs a write: a state made to hold `false` is made for nothing.
  const state = reachesCoreTransport ? requestStateOf(request) : stateIfAny(request);
  if (state !== undefined) state.toCoreTransport = reachesCoreTransport;
}

/** Whether a request goes from the hedging client straight to core-rest-pipeline's own transport (see {@link markForCoreTransport}). */
export function reachesCoreTransport(request: PipelineRequest): boolean {
  return stateIfAny(request)?.toCoreTransport === true;
}

/** A new way to cancel one arm of `request`'s race. */
export function armAbortFor(request: PipelineRequest): ArmAbort {
  return reachesCoreTransport(request) ? new LightArmAbort() : new AbortController();
}
