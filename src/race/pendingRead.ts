import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { ArmResult } from "../cosmos/statusTables.js";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { ThresholdTimers, WaitingRead } from "./thresholdTimers.js";
import { activeTraceContext, inTraceContext } from "../diagnostics/traceContext.js";

/**
 * What a {@link PendingRead} asks of the policy that sent it. A policy
 * sends its own kind of pending read (a subclass with what it needs to know
 * of the request), and is handed that object back.
 */
export interface PendingReadHost {
  /** The timers its reads wait for their thresholds by: one a threshold, shared by its reads. */
  readonly timers: ThresholdTimers;
  /**
   * Whether a response of the primary, come before any hedge was due, ends
   * the read without a race: any answer, final or transient, to a caller
   * that has not aborted, as the race would hand either back. An aborted
   * caller's read ends through the race, which answers with its `AbortError`.
   */
  endsAlone(read: PendingRead, response: PipelineResponse): boolean;
  /**
   * The race is over before any hedge was due, won alone or handed back as
   * its fallback: learns from it and publishes its record. @returns the
   * caller's answer; throws the caller's error.
   */
  concludeAlone(read: PendingRead, response: PipelineResponse): PipelineResponse;
  /**
   * Told of the primary's settlement as it comes, before anything is decided
   * on it: its response, or `undefined` when it failed without one.
   */
  noteSettled(read: PendingRead, response: PipelineResponse | undefined): void;
  /**
   * A hedge is due (`thresholdPassed`), or the primary settled with a
   * result the race must judge: the race, built now, adopting the primary
   * in flight, and the promise of its answer.
   */
  promote(read: PendingRead, thresholdPassed: boolean): PendingRace;
}

/** A race that adopted a pending read's primary (see `HedgingRace.adopt`). */
export interface PendingRace {
  /** The answer the race gives the caller. */
  readonly answer: Promise<PipelineResponse>;
  /** Hands the race the primary's settlement. */
  primaryEnded(result: ArmResult): void;
}

/** Set by {@link capture}, read at once by the constructor that called it: a promise's resolvers without a closure a read. */
let capturedResolve: ((response: PipelineResponse) => void) | undefined;
let capturedReject: ((error: unknown) => void) | undefined;

function capture(resolve: (response: PipelineResponse) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/**
 * A read while it may still become a race: the caller's request in flight
 * as the primary, exactly as the SDK built it, a place among the reads
 * waiting for its threshold (see {@link ThresholdTimers}), and this object.
 * Nearly every read ends here: its primary answers before the threshold
 * (a final answer, or a transient one such as a 429, which goes back to
 * the SDK's retry as the race would hand it back) and the host learns and
 * publishes from the facts kept on this object. Only when the threshold
 * passes, or the primary ends without an answer to give (a transport
 * error, the caller's abort), does the host build the race
 * (`HedgingRace.adopt`), which takes over the primary in
 * flight: planning, copies, signing, controllers, spans and records are
 * made only then.
 *
 * Nothing listens to the caller's abort signal while the read is pending:
 * the signal aborts the primary by itself, and the race it then becomes
 * answers with the `AbortError` the caller expects. Its wait ends as the
 * primary settles or the race is built, so nothing of a pending read
 * outlives it.
 */
export class PendingRead implements WaitingRead {
  /** When the primary went out (`performance.now()`). */
  readonly startedAt: number;
  /** When the primary settled; unset while it runs. */
  endedAt: number | undefined;
  waitingIn: WaitingRead["waitingIn"] = undefined;
  waitingBefore: WaitingRead | undefined = undefined;
  waitingAfter: WaitingRead | undefined = undefined;
  private race: PendingRace | undefined;
  /** Whether the caller has its answer from the read itself (alone, or the host's fault). */
  private done = false;
  /** The tracing context the read started in, where its race is built (see `activeTraceContext`). */
  private readonly traceContext = activeTraceContext();
  private readonly answer: Promise<PipelineResponse>;
  private readonly resolve: (response: PipelineResponse) => void;
  private readonly reject: (error: unknown) => void;

  /**
   * @param request - the caller's request, sent as it is.
   * @param region - where the SDK addressed it.
   * @param thresholdMs - when the first hedge is due.
   * @param startedAt - now (`performance.now()`), as the sender read it.
   */
  constructor(
    readonly request: PipelineRequest,
    readonly region: RegionEndpoint,
    readonly thresholdMs: number,
    private readonly host: PendingReadHost,
    startedAt = performance.now(),
  ) {
    this.startedAt = startedAt;
    this.answer = new Promise(capture);
    this.resolve = capturedResolve as (response: PipelineResponse) => void;
    this.reject = capturedReject as (error: unknown) => void;
    capturedResolve = capturedReject = undefined;
  }

  /** Sends the primary through `next` and starts waiting for the threshold. @returns the caller's answer. */
  start(next: SendRequest): Promise<PipelineResponse> {
    this.host.timers.add(this);
    let sent: Promise<PipelineResponse>;
    try {
      sent = next(this.request);
    } catch (error) {
      // A send that throws rather than rejects settles the primary like any failure.
      sent = Promise.reject(error);
    }
    sent.then(
      (response) => this.primaryResponded(response),
      (error: unknown) => this.primaryEnded({ error }),
    );
    return this.answer;
  }

  /** The threshold passed with the primary in flight: the read becomes a race, whose first hedge is due now. */
  thresholdPassed(): void {
    this.promote(true);
  }

  private primaryResponded(response: PipelineResponse): void {
    this.endedAt = performance.now();
    try {
      this.host.noteSettled(this, response);
      if (this.race === undefined && !this.done && this.host.endsAlone(this, response)) {
        this.clearTimer();
        const answer = this.host.concludeAlone(this, response);
        this.done = true;
        this.resolve(answer);
        return;
      }
    } catch (error) {
      this.fail(error);
      return;
    }
    this.handOver({ response });
  }

  private primaryEnded(result: ArmResult): void {
    this.endedAt = performance.now();
    try {
      this.host.noteSettled(this, undefined);
    } catch (error) {
      this.fail(error);
      return;
    }
    this.handOver(result);
  }

  /** The primary's settlement goes to the race, built now if it was not yet. */
  private handOver(result: ArmResult): void {
    const race = this.race ?? this.promote(false);
    race?.primaryEnded(result);
  }

  private promote(thresholdPassed: boolean): PendingRace | undefined {
    this.clearTimer();
    if (this.done) return undefined;
    try {
      const race = inTraceContext(this.traceContext, () => this.host.promote(this, thresholdPassed));
      this.race = race;
      race.answer.then(this.resolve, this.reject);
      return race;
    } catch (error) {
      this.fail(error);
      return undefined;
    }
  }

  /**
   * The host failed: the caller gets its error, through the race once there
   * is one (as the primary's), and a primary still in flight without a race
   * is left to end on its own.
   */
  private fail(error: unknown): void {
    this.clearTimer();
    if (this.done) return;
    if (this.race !== undefined) {
      this.race.primaryEnded({ error });
      return;
    }
    this.done = true;
    this.reject(error);
  }

  private clearTimer(): void {
    if (this.waitingIn !== undefined) this.host.timers.remove(this);
  }
}
