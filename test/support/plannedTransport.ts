import { AbortError } from "@azure/abort-controller";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";

/** A planned answer: a response with this status after `delayMs`. */
export interface PlannedResponse {
  readonly status: number;
  /** Sent as `x-ms-substatus` when given. */
  readonly subStatus?: number;
  /** Sent as `x-ms-activity-id` when given. */
  readonly activityId?: string;
  /** Sent as `x-ms-request-charge` when given. */
  readonly requestCharge?: number;
  /** The response's `bodyAsText`. */
  readonly body?: string;
  /** Milliseconds before the answer. Default 0. */
  readonly delayMs?: number;
}

/** A planned failure: the request rejects with `error` after `delayMs`. */
export interface PlannedError {
  readonly error: unknown;
  /** Milliseconds before the rejection. Default 0. */
  readonly delayMs?: number;
}

/** What the transport does with one request. */
export type Plan = PlannedResponse | PlannedError;

/** Runs `callback` after `ms` and returns a function that cancels it. */
export type Wait = (ms: number, callback: () => void) => () => void;

/** One request the transport received, as far as a leak or abort check needs it. */
export interface PlannedArm {
  readonly request: PipelineRequest;
  /** The URL origin: the region the arm went to. */
  readonly origin: string;
  /** The arm's own abort signal. */
  readonly signal: AbortSignal | undefined;
  /** `Date.now()` at arrival (the fake clock where one is installed). */
  readonly receivedAt: number;
  /** How the arm ended; `undefined` while it is in flight. */
  outcome?: "response" | "error" | "aborted";
}

/** Options of a {@link PlannedTransport}. */
export interface PlannedTransportOptions {
  /** Decides each request's answer; called once per request, at arrival. */
  plan(request: PipelineRequest): Plan;
  /** How delays are waited. Default: `setTimeout` (so a fake clock drives them). */
  wait?: Wait;
  /** Keep a {@link PlannedArm} per request. Turn it off to measure memory. Default `true`. */
  record?: boolean;
}

const timeoutWait: Wait = (ms, callback) => {
  const timer = setTimeout(callback, ms);
  return () => clearTimeout(timer);
};

function isPlannedError(plan: Plan): plan is PlannedError {
  return "error" in plan;
}

/**
 * A fake `HttpClient` whose answer to each request is decided by a function
 * of the request, rather than by a per-region script: it serves many
 * concurrent requests whose arms interleave in any order. A request's abort
 * signal cancels its pending answer and rejects it with an `AbortError`, as
 * a real transport does, and leaves no listener behind.
 */
export class PlannedTransport implements HttpClient {
  /** Every request received, in arrival order (empty when recording is off). */
  readonly arms: PlannedArm[] = [];
  private readonly wait: Wait;
  private readonly record: boolean;
  private pending = 0;
  private total = 0;

  constructor(private readonly options: PlannedTransportOptions) {
    this.wait = options.wait ?? timeoutWait;
    this.record = options.record ?? true;
  }

  /** Requests received so far. */
  get received(): number {
    return this.total;
  }

  /** Requests received and not yet answered, failed or aborted. */
  get inFlight(): number {
    return this.pending;
  }

  /** Records the request and answers it as planned, unless its signal aborts first. */
  sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
    const signal = request.abortSignal as AbortSignal | undefined;
    const arm: PlannedArm = { request, origin: new URL(request.url).origin, signal, receivedAt: Date.now() };
    if (this.record) this.arms.push(arm);
    this.total += 1;
    if (signal?.aborted) {
      arm.outcome = "aborted";
      return Promise.reject(new AbortError("The operation was aborted. Request has already been canceled."));
    }
    const plan = this.options.plan(request);
    this.pending += 1;
    return new Promise<PipelineResponse>((resolve, reject) => {
      const finish = (outcome: NonNullable<PlannedArm["outcome"]>): void => {
        arm.outcome = outcome;
        this.pending -= 1;
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = (): void => {
        cancel();
        finish("aborted");
        reject(new AbortError("The operation was aborted. Rejecting from abort signal callback while making request."));
      };
      const cancel = this.wait(plan.delayMs ?? 0, () => {
        if (isPlannedError(plan)) {
          finish("error");
          reject(plan.error);
          return;
        }
        finish("response");
        resolve(respond(request, plan));
      });
      signal?.addEventListener("abort", onAbort);
    });
  }
}

function respond(request: PipelineRequest, plan: PlannedResponse): PipelineResponse {
  const headers = createHttpHeaders({
    ...(plan.activityId !== undefined ? { "x-ms-activity-id": plan.activityId } : {}),
    ...(plan.subStatus !== undefined ? { "x-ms-substatus": String(plan.subStatus) } : {}),
    ...(plan.requestCharge !== undefined ? { "x-ms-request-charge": String(plan.requestCharge) } : {}),
  });
  return { status: plan.status, headers, request, ...(plan.body !== undefined ? { bodyAsText: plan.body } : {}) };
}
