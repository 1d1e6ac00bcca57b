import { Readable } from "node:stream";
import { AbortError } from "@azure/abort-controller";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { HttpClient, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";

/** A scripted response: sent `delayMs` (fake-clock) milliseconds after the request arrives. */
export interface ScriptedResponse {
  /** The HTTP status. */
  readonly status: number;
  /** Sent as `x-ms-substatus` when given. */
  readonly subStatus?: number;
  /** Default: `<origin host>-<sequence number>`, so every response has a distinct activity id. */
  readonly activityId?: string;
  /** Sent as `x-ms-request-charge` when given. */
  readonly requestCharge?: number;
  /** Further response headers; they override the ones above. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The response body: its `bodyAsText`, or its `readableStreamBody` when the request streams the status. */
  readonly body?: string;
  /** Milliseconds on the fake clock before the response arrives. Default 0. */
  readonly delayMs?: number;
}

/** A scripted failure: the request rejects with `error` after `delayMs`. */
export interface ScriptedError {
  /** What the request rejects with. */
  readonly error: unknown;
  /** Milliseconds on the fake clock before the rejection. Default 0. */
  readonly delayMs?: number;
}

/** One step of a region's script; each request to the region consumes the next step. */
export type ScriptStep = ScriptedResponse | ScriptedError;

/** What the transport did with one request. */
export interface ReceivedRequest {
  /** The request object exactly as the transport received it. */
  readonly request: PipelineRequest;
  /** The origin of the request URL: which region got it. */
  readonly origin: string;
  readonly url: string;
  readonly method: string;
  /** The headers at the moment of sending (later mutation of the request does not change them). */
  readonly headers: Readonly<Record<string, string>>;
  /** `Date.now()` (the fake clock) when the request arrived. */
  readonly receivedAt: number;
  /** `Date.now()` when the request settled, if it has. */
  settledAt?: number;
  /** How the request ended, if it has. */
  outcome?: "response" | "error" | "aborted";
  /** Whether the request's abort signal fired while the request was in flight (or before it arrived). */
  signalAborted: boolean;
}

/** A streamed body arrives in chunks of this size, as a network body arrives in several. */
const streamChunkBytes = 16;

function isScriptedError(step: ScriptStep): step is ScriptedError {
  return "error" in step;
}

function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * A scriptable fake `HttpClient` (also usable as a pipeline's `next`). Each
 * region, keyed by URL origin, has a script of responses and errors that its
 * requests consume in order, each after its delay on the (fake) clock. A
 * request's abort signal is honoured: the pending step is cancelled, the
 * request rejects with an `AbortError` worded as core-rest-pipeline's transport words it, and the record says it was aborted.
 * A request for which no step is left rejects and is recorded in
 * {@link FakeTransport.unscripted}, so a test can tell an unexpected request
 * from a scripted failure.
 */
export class FakeTransport implements HttpClient {
  /** Every request received, in arrival order. */
  readonly received: ReceivedRequest[] = [];
  /** Requests that arrived at an origin whose script was used up. */
  readonly unscripted: ReceivedRequest[] = [];
  private readonly scripts = new Map<string, ScriptStep[]>();
  private sequence = 0;

  /** Appends steps to the script of the origin of `endpoint` (any URL of the region). */
  script(endpoint: string, ...steps: ScriptStep[]): this {
    const origin = originOf(endpoint);
    const existing = this.scripts.get(origin) ?? [];
    existing.push(...steps);
    this.scripts.set(origin, existing);
    return this;
  }

  /** The requests received by the origin of `endpoint`. */
  receivedBy(endpoint: string): ReceivedRequest[] {
    const origin = originOf(endpoint);
    return this.received.filter((record) => record.origin === origin);
  }

  /** The transport as a pipeline `next` function. */
  readonly next: SendRequest = (request) => this.sendRequest(request);

  /** Records the request and plays the next step of its region's script. */
  sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
    const origin = originOf(request.url);
    const signal = request.abortSignal as AbortSignal | undefined;
    const record: ReceivedRequest = {
      request,
      origin,
      url: request.url,
      method: request.method,
      headers: request.headers.toJSON(),
      receivedAt: Date.now(),
      signalAborted: signal?.aborted ?? false,
    };
    this.received.push(record);
    this.sequence += 1;
    const sequence = this.sequence;

    return new Promise<PipelineResponse>((resolve, reject) => {
      const finish = (outcome: NonNullable<ReceivedRequest["outcome"]>): void => {
        record.outcome = outcome;
        record.settledAt = Date.now();
      };
      if (signal?.aborted) {
        finish("aborted");
        reject(new AbortError("The operation was aborted. Request has already been canceled."));
        return;
      }
      const step = this.scripts.get(origin)?.shift();
      if (step === undefined) {
        this.unscripted.push(record);
        finish("error");
        reject(new Error(`FakeTransport: no scripted step left for ${request.method} ${request.url}`));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        record.signalAborted = true;
        finish("aborted");
        reject(new AbortError("The operation was aborted. Rejecting from abort signal callback while making request."));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        if (isScriptedError(step)) {
          finish("error");
          reject(step.error);
          return;
        }
        finish("response");
        resolve(this.respond(request, step, sequence));
      }, step.delayMs ?? 0);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private respond(request: PipelineRequest, step: ScriptedResponse, sequence: number): PipelineResponse {
    const headers = createHttpHeaders({
      "x-ms-activity-id": step.activityId ?? `${new URL(request.url).hostname}-${sequence}`,
      ...(step.subStatus !== undefined ? { "x-ms-substatus": String(step.subStatus) } : {}),
      ...(step.requestCharge !== undefined ? { "x-ms-request-charge": String(step.requestCharge) } : {}),
      ...step.headers,
    });
    const response: PipelineResponse = { status: step.status, headers, request };
    if (step.body === undefined) return response;
    // Like Node's transport: a status the request asked to stream comes as a stream, anything else as text.
    const streams = request.streamResponseStatusCodes;
    if (streams?.has(step.status) === true || streams?.has(Number.POSITIVE_INFINITY) === true) {
      const bytes = Buffer.from(step.body);
      const chunks = Array.from({ length: Math.ceil(bytes.length / streamChunkBytes) }, (_, i) => bytes.subarray(i * streamChunkBytes, (i + 1) * streamChunkBytes));
      response.readableStreamBody = Readable.from(chunks);
    } else {
      response.bodyAsText = step.body;
    }
    return response;
  }
}

/**
 * A transport whose regions answer 200 after a latency chosen per request
 * from the request's origin, for as many requests as come (where a script
 * could not stay in step with which regions get arms), and that rejects with
 * an `AbortError` when an arm is aborted.
 */
export function latencyTransport(latencyOf: (origin: string) => number): HttpClient {
  return {
    sendRequest: (request) =>
      new Promise<PipelineResponse>((resolve, reject) => {
        const signal = request.abortSignal;
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(new AbortError("The operation was aborted. Rejecting from abort signal callback while making request."));
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve({ status: 200, headers: createHttpHeaders(), request });
        }, latencyOf(new URL(request.url).origin));
        signal?.addEventListener("abort", onAbort, { once: true });
      }),
  };
}
