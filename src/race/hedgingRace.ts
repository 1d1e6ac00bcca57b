import type { AbortSignalLike } from "@azure/abort-controller";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { isSuccessResult } from "../cosmos/statusTables.js";
import type { ArmAbort } from "./armAbort.js";
import { armAbortFor, reachesCoreTransport } from "./armAbort.js";
import { cloneRequestFor } from "./cloneRequest.js";
import type { HedgeArmReason, HedgeDrainEnd, HedgeSkipReason } from "../diagnostics/diagnostics.js";
import { loserDrainDefaults } from "./loserDrain.js";
import type { RaceArm, RaceInput, RaceOutcome } from "./race.js";
import type { DrainedConnection } from "./drainSockets.js";
import { drainConnection, drainedConnectionOf } from "./drainSockets.js";
import { holdSocket } from "./socketHolders.js";

/** A loser running on after its race was decided. */
interface Drain {
  readonly decidedAt: number;
  /** Its time bound (re-armed by a timer that fired before its time, see `drainTimer`). */
  timer: ReturnType<typeof setTimeout>;
  readonly done: (arm: RaceArm) => void;
  /** Whether it holds a slot of the policy's drains (a primary that cannot be aborted drains without one when none is free). */
  readonly slot: boolean;
  /** The arm's connection, for a primary the race cannot abort through a signal (see `drainConnection`). */
  readonly connection: DrainedConnection | undefined;
  end?: HedgeDrainEnd;
  endedAt?: number;
  result?: ArmResult;
}

interface ArmState {
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly reason: HedgeArmReason;
  /** Cancels the arm; unset for a primary sent with the caller's own signal, which the race cannot fire. */
  readonly controller: ArmAbort | undefined;
  /** The request this arm sends: the caller's for the primary, a copy for each hedge. */
  readonly request: PipelineRequest;
  readonly startedAt: number;
  /** Whether the request has been handed to `send` (a hedge still being prepared has not). */
  sent?: boolean;
  /** Whether a transient result of another arm launched it. */
  early?: boolean;
  endedAt?: number;
  result?: ArmResult;
  aborted?: boolean;
  drain?: Drain;
}

/** Whether an arm is still running: not settled, and not cut before the race's decision (see `giveUpSocket`). */
function running(arm: ArmState): boolean {
  return arm.result === undefined && arm.aborted !== true;
}

const noDrains: readonly Promise<RaceArm>[] = Object.freeze([]);

/**
 * Reads and discards the streamed body of a response that nobody will read,
 * so that its connection can go back to the pool; a body longer than
 * `maxBytes` is destroyed instead, which closes its connection. Bodies the
 * transport has already read (`bodyAsText`) need nothing.
 * @returns whether the body was read to its end (or there was none to read).
 */
export function discardStreamBody(response: PipelineResponse | undefined, maxBytes: number): Promise<boolean> {
  if (response?.browserStreamBody !== undefined) {
    return response.browserStreamBody.cancel().then(
      () => false,
      () => false,
    );
  }
  const body = response?.readableStreamBody as (NodeJS.ReadableStream & { destroy?: () => void }) | undefined;
  if (body === undefined) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    let bytes = 0;
    const finish = (complete: boolean): void => {
      body.removeListener("data", onData);
      body.removeListener("end", onEnd);
      body.removeListener("close", onClose);
      body.removeListener("error", onClose);
      resolve(complete);
    };
    const onData = (chunk: string | Buffer): void => {
      bytes += chunk.length;
      if (bytes <= maxBytes) return;
      finish(false);
      body.destroy?.();
    };
    const onEnd = (): void => finish(true);
    const onClose = (): void => finish(false);
    body.on("data", onData);
    body.on("end", onEnd);
    body.on("close", onClose);
    // Listening for errors also keeps a stream destroyed by an abort from throwing.
    body.on("error", onClose);
    body.resume();
  });
}

/** Closes a response's body stream, and with it its connection. */
function destroyBody(response: PipelineResponse | undefined): void {
  (response?.readableStreamBody as { destroy?: () => void } | undefined)?.destroy?.();
  void response?.browserStreamBody?.cancel().catch(() => undefined);
}

/** The timer callback of the first hedge: a module function with the race as its argument, so that no closure is made per request. */
function thresholdPassed(race: { thresholdPassed(): void }): void {
  race.thresholdPassed();
}

/** The timer callback of a refused hedge asked again. */
function askAgain(race: { askAgain(): void }): void {
  race.askAgain();
}

function primaryWaitedLongEnough(race: { primaryWaitedLongEnough(): void }): void {
  race.primaryWaitedLongEnough();
}

/**
 * One request's race across regions, built lazily: until a hedge is due,
 * it is the caller's request in flight, one timer and this object.
 *
 * Lifecycle, each step a method:
 * - {@link HedgingRace.run}: the caller's request goes out as the primary,
 *   as it is, and the threshold timer starts. Nothing listens to the
 *   caller's signal: aborting it aborts the primary by itself.
 * - {@link HedgingRace.thresholdPassed}: {@link HedgingRace.beginHedging} asks for the plan (the
 *   hedges' regions), starts listening to the caller's signal and launches
 *   the first hedge, a copy of the request.
 * - {@link HedgingRace.launch}: each further hedge goes
 *   `strategy.delayBefore(i)` after the previous one, or at once when a
 *   hedge's transient result brings it forward; at most one brought-forward hedge is
 *   in flight at a time, so a total outage never fans out to every region.
 *   A hedge the strategy refuses stops the hedging, unless the strategy
 *   names a later time to ask again ({@link HedgingRace.askAgain}).
 * - {@link HedgingRace.settle}: a hedge's `win` decides the race, and so
 *   does the primary's answer, whatever its verdict (as the fallback when it
 *   is no `win`): a transient one is the caller's retry policy's to act on,
 *   which a hedge held for would delay.
 * - {@link HedgingRace.decide} and {@link HedgingRace.end}: no more hedges;
 *   each loser drains (see `drain`) or is aborted. A primary sent without
 *   `eager` has no signal of the race's, so it drains whatever `drain`
 *   says; its connection is released from keeping the process alive, and
 *   destroyed past the drain's bounds.
 *
 * The caller's abort signal aborts every arm, drained ones included, for
 * as long as any runs. The returned promise rejects only when a strategy
 * itself throws: an arm's failure is a result, and a loser that settles
 * after the race is decided reaches nobody but its drain record, so no
 * rejection goes unhandled. When the race and its drains have ended no
 * timer or listener of them remains.
 */
export class HedgingRace<T = RaceOutcome> {
  private readonly startedAt: number;
  private readonly callerSignal: AbortSignalLike | undefined;
  private resolveWith!: (value: T) => void;
  private reject!: (error: unknown) => void;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The primary's abort, with `eager` only. */
  private primaryController: ArmAbort | undefined;
  /** The primary's result while the race has no arms yet. */
  private primaryResult: ArmResult | undefined;
  private primaryEndedAt: number | undefined;
  /** Every arm, the primary first; unset until a hedge is due. */
  private arms: ArmState[] | undefined;
  /** The primary's region, then the hedges' in launch order: the race's own copy of the plan, which `launch` prunes. */
  private targets: RegionEndpoint[] | undefined;
  private skipReason: HedgeSkipReason | undefined;
  private listening = false;
  private abortListener: (() => void) | undefined;
  private decided = false;
  /** Whether the strategy refused the latest hedge asked for: the record's `budgetExhausted`. */
  private hedgeRefused = false;
  /** Whether that refusal is final (see `RaceStrategy.admitAfter`); it implies `hedgeRefused`. */
  private refusedForGood = false;
  private draining = 0;
  /** The caller aborted before the race was decided: every hedge is cut, and the race ends with whatever the primary ends with. */
  private callerGaveUp = false;

  /**
   * @param startedAt - when the primary went out (`performance.now()`): now
   *   for {@link HedgingRace.run}; the time a {@link PendingRead} sent it
   *   for {@link HedgingRace.adopt}.
   */
  constructor(
    private readonly input: RaceInput<T>,
    startedAt = performance.now(),
  ) {
    this.startedAt = startedAt;
    this.callerSignal = input.request.abortSignal;
  }

  /** Sends the primary and starts the threshold timer. @returns how the race ended, or what `conclude` made of it. */
  run(): Promise<T> {
    return this.settledBy(() => {
      const { request } = this.input;
      if (this.callerSignal?.aborted === true) {
        // Handed down as the SDK built it: the transport refuses it in its own words (or sends it, if it ignores the signal),
        // as it would unhedged, and the race ends with that.
        this.sendPrimary();
        return;
      }
      if (this.input.eager ?? this.input.drain === undefined) {
        if (this.takePrimarySignal(request)) this.listen();
        // A race that must be able to cut its primary (a write, an agent that bounds its sockets) cannot race a request
        // whose signal it cannot set (a policy of the caller's froze it): the primary goes alone, as it would unhedged.
        else this.skipReason = "notEligible";
      }
      this.sendPrimary();
      if (this.skipReason === undefined) this.timer = setTimeout(thresholdPassed, this.input.strategy.delayBefore(1), this);
    });
  }

  /**
   * Takes over a primary already in flight (a read sent lazily, see
   * `PendingRead`): its settlement comes through
   * {@link HedgingRace.primaryEnded}, which its sender calls, and the first
   * hedge is due now (`thresholdPassed`) or when that settlement says so.
   * Only a race without `eager` can adopt a primary: the caller's request
   * went out with the caller's own signal.
   * @returns how the race ended, or what `conclude` made of it.
   */
  adopt(thresholdPassed: boolean): Promise<T> {
    return this.settledBy(() => {
      if (thresholdPassed) this.thresholdPassed();
    });
  }

  /** The race's promise, which `resolve` and `fault` settle, with `start` run as it is made. */
  private settledBy(start: () => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.resolveWith = resolve;
      this.reject = reject;
      start();
    });
  }

  /** The adopted primary's settlement (see {@link HedgingRace.adopt}), its response already noted by its sender. */
  primaryEnded(result: ArmResult): void {
    this.primarySettled(result);
  }

  /**
   * Gives the primary an abort signal of the race's; a request that takes
   * no change (a policy of the caller's froze it) keeps the caller's.
   * @returns whether the primary now carries the race's signal.
   */
  private takePrimarySignal(request: PipelineRequest): boolean {
    const controller = armAbortFor(request);
    if (!Reflect.set(request, "abortSignal", controller.signal)) return false;
    this.primaryController = controller;
    return true;
  }

  /** A write's primary that failed for good has waited for its hedges as long as it took itself: its answer goes back. Called by the race's own timer. */
  primaryWaitedLongEnough(): void {
    this.timer = undefined;
    this.guard(() => {
      if (!this.decided) this.decideOnPrimaryAnswer();
    });
  }

  /** A refused hedge may be admitted now (see `RaceStrategy.admitAfter`). Called by the race's own timer. */
  askAgain(): void {
    this.timer = undefined;
    this.guard(() => this.launch("threshold"));
  }

  /** The threshold passed with the primary in flight: the first hedge is due. Called by the race's own timer. */
  thresholdPassed(): void {
    this.timer = undefined;
    this.guard(() => this.beginHedging("threshold"));
  }

  private sendPrimary(): void {
    const { request, primaryRegion } = this.input;
    let sent: Promise<PipelineResponse>;
    try {
      sent = this.input.send(request, 0, primaryRegion, "primary");
    } catch (error) {
      // A send that throws rather than rejects settles the primary like any failure: the race ends and keeps nothing.
      sent = Promise.reject(error);
    }
    sent.then(
      (response) => {
        this.input.onResponse?.(primaryRegion.name, response);
        this.primarySettled({ response });
      },
      (error: unknown) => this.primarySettled({ error }),
    );
  }

  private primarySettled(result: ArmResult): void {
    const primary = this.arms?.[0];
    if (primary !== undefined) {
      this.guard(() => this.settle(primary, result));
      return;
    }
    if (this.decided) return;
    this.primaryResult = result;
    this.primaryEndedAt = performance.now();
    // Not through `guard`: nearly every read ends here, and a closure a read is what the lazy race saves.
    try {
      this.cancelTimer();
      // Cut by the caller's abort, the primary fails in its transport's words; one whose transport answered anyway answers.
      if (this.callerSignal?.aborted === true && result.error !== undefined) {
        this.abortAlone();
        return;
      }
      // Whatever the primary brought goes back as it came: a transient answer is the SDK's to retry, as it would unhedged.
      this.decideAlone(this.input.strategy.judge({ index: 0, region: this.input.primaryRegion, result }) !== "win");
    } catch (error) {
      this.fault(error);
    }
  }

  /** A hedge is due: plans the hedges, arms the race, launches the first one. */
  private beginHedging(reason: HedgeArmReason): void {
    if (this.decided) return;
    const hedges = this.input.hedges();
    if (typeof hedges === "string") {
      this.skipReason = hedges;
      return;
    }
    const { request, primaryRegion } = this.input;
    this.targets = [primaryRegion, ...hedges];
    const primary: ArmState = {
      index: 0,
      region: primaryRegion,
      reason: "primary",
      controller: this.primaryController,
      request,
      startedAt: this.startedAt,
      sent: true,
    };
    this.arms = [primary];
    this.listen();
    // Refused by the budget, the primary's own settlement decides, as it would have alone.
    this.launch(reason);
  }

  private listen(): void {
    if (this.listening || this.callerSignal === undefined) return;
    this.listening = true;
    // Made here, not with the race: a read that never hedges never listens.
    this.abortListener ??= () => this.callerAborted();
    this.callerSignal.addEventListener("abort", this.abortListener);
  }

  private stopListening(): void {
    if (!this.listening || this.abortListener === undefined) return;
    this.listening = false;
    this.callerSignal?.removeEventListener("abort", this.abortListener);
  }

  /**
   * Every hedge is cut at once, and so is the primary: by the caller's
   * signal itself, or, eager, through the race's. The race then ends with
   * what the primary ends with (its transport's own `AbortError`, an error
   * of reading its body, a response its transport finished anyway), which
   * is what the caller would have got unhedged.
   */
  private callerAborted(): void {
    const arms = this.arms;
    if (this.decided) {
      for (const arm of arms ?? []) this.cutDrain(arm, "callerAborted");
      return;
    }
    this.callerGaveUp = true;
    this.cancelTimer();
    this.stopListening();
    const now = performance.now();
    for (const arm of arms ?? []) {
      if (arm.index === 0 || !running(arm)) continue;
      this.input.strategy.release?.(arm.index);
      this.abortArm(arm, now);
    }
    this.primaryController?.abort();
    // A write's primary that answered and waited for its hedges: its answer goes back now.
    if (arms?.[0]?.result !== undefined) this.decideOnPrimaryAnswer();
  }

  /** Settles the race's promise with its outcome, or with what `conclude` makes of it (which may throw: the caller's error). */
  private resolve(outcome: RaceOutcome): void {
    const { conclude } = this.input;
    if (conclude === undefined) {
      this.resolveWith(outcome as T);
      return;
    }
    try {
      this.resolveWith(conclude.call(this.input, outcome));
    } catch (error) {
      this.reject(error);
    }
  }

  /** Runs a step; a fault in a strategy ends the race with that error, not an unhandled rejection. */
  private guard(step: () => void): void {
    try {
      step();
    } catch (error) {
      this.fault(error);
    }
  }

  /** A strategy's fault: the race ends with its error. */
  private fault(error: unknown): void {
    if (!this.decided) this.end(undefined);
    this.input.fail?.(error);
    this.reject(error);
  }

  private cancelTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private canLaunchMore(): boolean {
    return !this.hedgeRefused && this.arms !== undefined && this.targets !== undefined && this.arms.length < this.targets.length;
  }

  private scheduleNext(): void {
    this.cancelTimer();
    if (!this.canLaunchMore()) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.guard(() => this.launch("threshold"));
    }, this.input.strategy.delayBefore(this.arms?.length ?? 1));
  }

  /** Launches the next hedge, a copy of the request. @returns whether it went out (the strategy may refuse it). */
  private launch(reason: HedgeArmReason): boolean {
    const { arms, targets } = this;
    if (arms === undefined || targets === undefined) return false;
    const index = arms.length;
    // The next region planned may have been excluded or throttled since (a later hedge goes long after the plan, an
    // asked-again one too): it is passed over for the one after, each asked once, as it comes up.
    while (targets[index] !== undefined && this.input.mayHedgeInto?.(targets[index]) === false) targets.splice(index, 1);
    const region = targets[index];
    // Once the strategy has refused a hedge for good, it is not asked again: a
    // budget freed later must not revive a race that was already cut short.
    if (this.decided || this.refusedForGood || region === undefined) return false;
    const { strategy, request } = this.input;
    if (strategy.admit !== undefined && !strategy.admit(index)) {
      this.hedgeRefused = true;
      this.cancelTimer();
      // A read refused for want of straggler evidence asks again once it has waited long enough to carry it.
      const againMs = strategy.admitAfter?.(index);
      if (againMs === undefined) this.refusedForGood = true;
      else this.timer = setTimeout(askAgain, againMs, this);
      return false;
    }
    this.hedgeRefused = false;
    const controller = armAbortFor(request);
    const copy = cloneRequestFor(request, region, controller.signal);
    const arm: ArmState = { index, region, reason, controller, request: copy, startedAt: performance.now() };
    if (reason !== "threshold") arm.early = true;
    arms.push(arm);
    void this.sendHedge(arm);
    this.scheduleNext();
    return true;
  }

  private async sendHedge(arm: ArmState): Promise<void> {
    let result: ArmResult;
    try {
      const preparing = this.input.prepare?.(arm.request, arm.index);
      // A synchronous preparation sends the arm in the same turn; only an asynchronous one is awaited.
      if (preparing !== undefined) {
        await preparing;
        // The race may have ended while the arm was being prepared; an arm
        // that lost before it was sent must not go out at all.
        if (arm.aborted) return;
      }
      arm.sent = true;
      // A write's hedge is never cut: the service may have applied it, and only its answer says so.
      const release = this.input.strategy.primaryWaitsForHedges === true ? undefined : holdSocket(arm.request, () => this.guard(() => this.giveUpSocket(arm)));
      try {
        const response = await this.input.send(arm.request, arm.index, arm.region, arm.reason);
        this.input.onResponse?.(arm.region.name, response);
        result = { response };
      } finally {
        release?.();
      }
    } catch (error) {
      result = { error };
    }
    this.guard(() => this.settle(arm, result));
  }

  /**
   * A request of the SDK's would wait for the socket this read's hedge
   * holds (its agent bounds them; see `holdSocket`): the hedge is cut, as a
   * loser is, and the race goes on with its primary, sending no hedge more
   * (one would take the socket freed for the SDK's request).
   */
  private giveUpSocket(arm: ArmState): void {
    if (this.decided || arm.result !== undefined || arm.aborted === true || arm.drain !== undefined) return;
    this.abortArm(arm, performance.now());
    this.input.strategy.release?.(arm.index);
    this.refusedForGood = true;
    this.cancelTimer();
  }

  /** What an arm's settlement means for the race. */
  private settle(arm: ArmState, result: ArmResult): void {
    if (arm.drain !== undefined) {
      this.settleDrain(arm, arm.drain, result);
      return;
    }
    const arms = this.arms;
    if (this.decided || arm.aborted || arms === undefined) return;
    // Once the caller has aborted, only the primary is left to settle (see callerAborted).
    if (this.callerGaveUp && result.error !== undefined) {
      this.abortedWith(arm, result.error);
      return;
    }
    arm.result = result;
    arm.endedAt = performance.now();
    const { strategy } = this.input;
    if (arm.index > 0) strategy.release?.(arm.index);
    const verdict = strategy.judge({ index: arm.index, region: arm.region, result });
    // A write's primary that failed for good while a hedge runs (a create's 409, a 412, a 404) may have met what that
    // hedge applied, whose own answer says so: it waits for it, as its transient answer does.
    const metItsHedge = verdict === "win" && arm.index === 0 && strategy.primaryWaitsForHedges === true && !isSuccessResult(result) && arms.some(running);
    if (verdict === "win" && !metItsHedge) {
      this.decide(arm.index, false);
      return;
    }
    const inFlight = arms.some(running);
    // The primary's answer goes back as soon as it comes, unless a hedge succeeded first: a transient one is the SDK's to
    // retry (a 429 in the same region after its back-off, a reset a second later), which a hedge held for would delay,
    // and an error of a region the SDK did not choose (a replica behind the writes, a 401) must not replace it. A write's
    // waits for its hedges in flight instead (see `RaceStrategy.primaryWaitsForHedges`), and the race asks no more regions.
    if (arm.index === 0) {
      if (strategy.primaryWaitsForHedges === true && inFlight) {
        this.cancelTimer();
        // A final failure is most often the caller's own (a document that exists, a stale etag): its hedges get as long
        // again as the primary took, not the SDK's whole timeout, so that a hedge region that hangs turns no definite
        // answer into a timeout.
        if (metItsHedge) this.timer = setTimeout(primaryWaitedLongEnough, Math.max(1, (arm.endedAt ?? this.startedAt) - this.startedAt), this);
      } else this.decideOnPrimaryAnswer();
      return;
    }
    // A write's primary has answered and waits: the last hedge to settle without winning decides (see decideOnPrimaryAnswer).
    if (arms[0]?.result !== undefined) {
      if (!inFlight) this.decideOnPrimaryAnswer();
      return;
    }
    // A hedge's transient result brings the next hedge forward, one at a time: never while another brought forward is out.
    if (verdict === "next" && !arms.some((other) => other.early === true && running(other))) {
      this.launch(strategy.earlyLaunchReason ?? "transientResult");
    }
  }

  /**
   * The primary answered without winning and no hedge is in flight: its
   * answer goes back, unless a write's hedge answered 2xx without winning (a
   * bulk request's, carrying the failure of an operation of its own, such as
   * a stale `ifMatch`). That hedge applied its other operations, which the
   * SDK's retry of the primary would meet (a 409, a 404), so its answer is
   * the write's.
   */
  private decideOnPrimaryAnswer(): void {
    const applied = this.input.strategy.primaryWaitsForHedges === true ? this.arms?.find((other) => other.index > 0 && isSuccessResult(other.result)) : undefined;
    if (applied !== undefined) this.decide(applied.index, false);
    else this.decide(0, true);
  }

  /** The race decided before any hedge went out: the primary is the only arm. */
  private decideAlone(fallback: boolean): void {
    const result = this.primaryResult;
    if (result === undefined) throw new Error("A race was decided on a primary without a result.");
    const primary: RaceArm = {
      index: 0,
      region: this.input.primaryRegion,
      reason: "primary",
      startedAt: this.startedAt,
      endedAt: this.primaryEndedAt,
      result,
    };
    this.decided = true;
    this.cancelTimer();
    this.stopListening();
    this.resolve({
      kind: "decided",
      startedAt: this.startedAt,
      result,
      returnedIndex: 0,
      fallback,
      arms: [primary],
      hedgeRefused: false,
      skipReason: this.skipReason,
      drains: noDrains,
    });
  }

  /** The caller aborted after the hedging began, and the primary failed since: the caller gets its error, every hedge already cut. */
  private abortedWith(primary: ArmState, error: unknown): void {
    primary.aborted = true;
    primary.endedAt = performance.now();
    this.end(undefined);
    this.resolve({ kind: "aborted", startedAt: this.startedAt, arms: this.arms ?? [], hedgeRefused: this.hedgeRefused, skipReason: this.skipReason, error });
  }

  /** The caller aborted before any hedge went out, and the primary failed since: the caller gets its error. */
  private abortAlone(): void {
    const primary: RaceArm = {
      index: 0,
      region: this.input.primaryRegion,
      reason: "primary",
      startedAt: this.startedAt,
      endedAt: this.primaryEndedAt ?? performance.now(),
      aborted: true,
    };
    this.decided = true;
    this.cancelTimer();
    this.stopListening();
    this.resolve({ kind: "aborted", startedAt: this.startedAt, arms: [primary], hedgeRefused: false, skipReason: this.skipReason, error: this.primaryResult?.error });
  }

  /** Decides the race on an arm's result. */
  private decide(returnedIndex: number, fallback: boolean): void {
    const arms = this.arms ?? [];
    const result = arms[returnedIndex]?.result;
    if (result === undefined) throw new Error("A race was decided on an arm without a result.");
    const drains = this.end(returnedIndex, fallback);
    this.resolve({
      kind: "decided",
      startedAt: this.startedAt,
      result,
      returnedIndex,
      fallback,
      arms,
      hedgeRefused: this.hedgeRefused,
      skipReason: this.skipReason,
      drains,
    });
  }

  /** Ends the race: no more hedges; losers drain or are aborted. @returns the drains started. */
  private end(returnedIndex: number | undefined, fallback = false): Promise<RaceArm>[] {
    this.decided = true;
    this.cancelTimer();
    const now = performance.now();
    const drains: Promise<RaceArm>[] = [];
    const { drain, strategy } = this.input;
    for (const arm of this.arms ?? []) {
      // A hedge cut to give its socket up was aborted already.
      if (arm.aborted === true) continue;
      if (arm.result !== undefined) {
        if (arm.index !== returnedIndex) void discardStreamBody(arm.result.response, drain?.settings.maxDrainBytes ?? 0);
        continue;
      }
      if (arm.index > 0) strategy.release?.(arm.index);
      if (returnedIndex === undefined) {
        // The caller's abort: a primary with the caller's own signal was aborted by it already.
        this.abortArm(arm, now);
        continue;
      }
      if (arm.controller === undefined) {
        // A primary sent with the caller's signal only: the race cannot abort it, so it drains.
        drains.push(this.startDrain(arm, now, drain?.tryStart() === true, drainConnection(arm.request, drain?.settings.maxDrainMs ?? loserDrainDefaults.maxDrainMs)));
        continue;
      }
      // A loser not yet sent never goes out: aborting it costs no connection. Nor does a hedge drain past the primary's
      // answer that did not win: the SDK retries that attempt, and once it has the caller's abort no longer reaches the
      // attempt's signal, the only one a drain listens to. Nor does a hedge sent through a transport of the caller's that
      // pools its own connections (a fetch client): it is not on the agent its request names, and nothing could keep it
      // from holding the process until it answers, which plain @azure/cosmos, never having sent it, would not. (A primary
      // drains there all the same: plain would wait for that very request, and its answer is what the SDK's breaker and
      // endpoint discovery must hear of.) Nor does a hedge whose socket cannot be told from a copy's (`null`: a hot item's
      // hedges, two change feeds read from the start at once): none of theirs could be let go of, and each would hold the
      // process for the drain's bound.
      const mayDrain = drain !== undefined && arm.sent === true && !fallback;
      const connection = mayDrain ? drainedConnectionOf(arm.request) : undefined;
      const untraceable =
        arm.index > 0 && (connection === null || (connection === undefined && arm.request.agent != null && !reachesCoreTransport(this.input.request)));
      // A primary with the race's own signal is cut through it at its bound, whatever its connection.
      if (mayDrain && !untraceable && drain.tryStart()) drains.push(this.startDrain(arm, now, true, connection ?? undefined));
      else this.abortArm(arm, now);
    }
    if (this.draining === 0) this.stopListening();
    return drains;
  }

  private abortArm(arm: ArmState, now: number): void {
    arm.aborted = true;
    arm.endedAt = now;
    arm.controller?.abort();
  }

  /** @param connection - the arm's connection on its agent (see `drainConnection`), where the race must cut it by its connection. */
  private startDrain(arm: ArmState, decidedAt: number, slot: boolean, connection: DrainedConnection | undefined): Promise<RaceArm> {
    return new Promise<RaceArm>((done) => {
      this.draining += 1;
      const { maxDrainMs } = this.input.drain?.settings ?? loserDrainDefaults;
      // The primary, the caller's own request (with a signal of the race's or not): plain, the caller would have cut it
      // at its timeout, which it no longer applies once the race has answered it. Past that, a primary whose connection
      // cannot be let go of (a copy of it on the agent: a hot item; a transport of the user's that pools its own) would
      // hold the process for the drain's bound, where plain's had been cut and retried long before.
      const { callerTimeoutMs } = this.input;
      const callerDeadline = arm.index === 0 && callerTimeoutMs !== undefined ? arm.startedAt + callerTimeoutMs : Number.POSITIVE_INFINITY;
      const deadline = Math.min(callerDeadline, decidedAt + maxDrainMs);
      const timer = this.drainTimer(arm, deadline, deadline - decidedAt);
      // Neither the timer (see drainTimer) nor the connection keeps the process alive: a script that got its answer exits without waiting for the loser.
      connection?.release();
      arm.drain = { decidedAt, timer, done, slot, connection };
      // Node's transport reads this when the response headers arrive: a loser whose headers are still to come
      // hands its body over as a stream, which the drain reads within the byte bound. (A progress callback
      // would count the bytes too, but aborting a request under one throws from the transport's stream.)
      // A frozen request (the caller's own primary) takes no change: its body comes whole, and the drain still bounds its time.
      Reflect.set(arm.request, "streamResponseStatusCodes", new Set([Number.POSITIVE_INFINITY]));
    });
  }

  /**
   * The timer that cuts a drain at `deadline` (`performance.now()`), `inMs` from now, not keeping the process alive.
   * A timer may fire a little before its time by the event loop's clock: it waits out what is left, so that a primary
   * cut at the caller's timeout has run at least that long, and the SDK's breaker counts it against its region as it
   * counts plain's.
   */
  private drainTimer(arm: ArmState, deadline: number, inMs: number): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      const active = arm.drain;
      if (active === undefined || active.end !== undefined) return;
      const left = deadline - performance.now();
      if (left > 0) active.timer = this.drainTimer(arm, deadline, left);
      else this.cutDrain(arm, "timeLimit");
    }, Math.max(0, Math.ceil(inMs)));
    // The loser's own request keeps the process alive while it runs; its bound alone must not.
    (timer as { unref?: () => void }).unref?.();
    return timer;
  }

  /** A drained loser's own settlement: its response came; its body is read (within the byte bound) before the drain ends. */
  private settleDrain(arm: ArmState, active: Drain, result: ArmResult): void {
    if (active.end !== undefined) {
      // Past its bound, a loser whose connection could not be cut still answers at last: its unread body would hold
      // that connection, and the process with it, for good. Dropped at its first byte, it closes the connection.
      active.connection?.settled();
      void discardStreamBody(result.response, 0);
      return;
    }
    active.result = result;
    active.endedAt = performance.now();
    const maxBytes = this.input.drain?.settings.maxDrainBytes ?? loserDrainDefaults.maxDrainBytes;
    void discardStreamBody(result.response, maxBytes).then((complete) => {
      if (complete) this.endDrain(arm, "settled");
      else this.cutDrain(arm, "byteLimit");
    });
  }

  /** Aborts a drained loser that reached a bound; it ends now, whether or not its transport ever settles. */
  private cutDrain(arm: ArmState, how: HedgeDrainEnd): void {
    const active = arm.drain;
    if (active === undefined || active.end !== undefined) return;
    active.endedAt ??= performance.now();
    if (arm.controller !== undefined) arm.controller.abort();
    // The caller's own request (no controller of the race's) was cut already by the caller's abort, through its signal.
    else if (how !== "callerAborted") this.cutCallersRequest(active);
    this.endDrain(arm, how);
  }

  /** Cuts a drained primary the race has no signal for, at a bound, through its connection. */
  private cutCallersRequest(active: Drain): void {
    // A loser that has answered (its body still coming, or past the byte bound) is cut by its own body, the one
    // connection known to be its: counted among its copies, it would stand for a copy still some caller's.
    if (active.result !== undefined) destroyBody(active.result.response);
    // With copies of it on the agent, they are closed together once none is awaited any more.
    else active.connection?.destroy();
  }

  /** Ends a drain: its slot, its timer, its record; the last one to end stops listening to the caller. */
  private endDrain(arm: ArmState, how: HedgeDrainEnd): void {
    const active = arm.drain;
    if (active === undefined || active.end !== undefined) return;
    active.end = how;
    clearTimeout(active.timer);
    if (active.slot) this.input.drain?.end();
    this.draining -= 1;
    if (this.draining === 0) this.stopListening();
    active.done(arm);
  }
}

/** Runs one request's race (see {@link HedgingRace}). */
export function runRace(input: RaceInput): Promise<RaceOutcome> {
  return new HedgingRace<RaceOutcome>(input).run();
}
