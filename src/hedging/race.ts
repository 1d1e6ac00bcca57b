import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../caches/regionCache.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import { armAbortFor } from "./armAbort.js";
import type { ArmAbort } from "./armAbort.js";
import { cloneRequestFor } from "./cloneRequest.js";
import type { HedgeArmReason, HedgeDrainEnd } from "./diagnostics.js";
import type { LoserDrain } from "./loserDrain.js";

/**
 * What a strategy makes of a settled arm: it wins; the next arm launches
 * now; the race waits; or (`hold`) it is an answer that may not beat a
 * primary still in flight: it wins once the primary has settled without
 * winning, or when no arm does better.
 */
export type Verdict = "win" | "next" | "wait" | "hold";

/** An arm that has settled, as a strategy sees it. */
export interface SettledArm {
  /** 0 for the primary, 1.. for the hedges in launch order. */
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly result: ArmResult;
}

/**
 * The policy-specific part of a race: when hedges launch, and which result
 * wins. The engine owns everything else (cloning, timers, aborts, cleanup).
 */
export interface RaceStrategy {
  /** Milliseconds between the launch of arm `index - 1` and of arm `index` (`index` >= 1). */
  delayBefore(index: number): number;
  /** What an arm's settlement means. */
  judge(arm: SettledArm): Verdict;
  /** Why a hedge that launches early (on a `next` verdict) was sent. */
  readonly earlyLaunchReason: HedgeArmReason;
  /** Asked before hedge `index` launches; `false` stops all further hedges (a spent budget). */
  admit?(index: number): boolean;
  /** Called once for every admitted hedge, when it settles or is aborted. */
  release?(index: number): void;
}

/** What an arm is, as its sender sees it. */
export interface ArmLaunch {
  /** 0 for the primary, 1.. for the hedges in launch order. */
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly reason: HedgeArmReason;
}

/** Everything a race needs. */
export interface RaceInput {
  /** The request as the caller made it; never sent itself, only cloned. */
  readonly request: PipelineRequest;
  /** The regions of the arms: the primary first, then the hedges in order. */
  readonly targets: readonly RegionEndpoint[];
  /** Sends one arm through the rest of the pipeline. */
  readonly send: (request: PipelineRequest, arm: ArmLaunch) => Promise<PipelineResponse>;
  readonly strategy: RaceStrategy;
  /** Runs on each arm (`index` 0 is the primary) before it is sent, for example to sign it afresh. */
  readonly prepare?: ((request: PipelineRequest, index: number) => void | Promise<void>) | undefined;
  /** Leaves the losers of a decided race to finish within these bounds; `undefined` aborts them. */
  readonly drain?: LoserDrain | undefined;
  /** Told of every arm's response as it arrives, a drained loser's included, with the arm's region. */
  readonly onResponse?: ((region: string, response: PipelineResponse) => void) | undefined;
}

/**
 * A drained loser's run after the decision. Its result lands here rather
 * than on the arm, so that the arm reads as it stood when the race was
 * decided, whenever it is read.
 */
export interface ArmDrain {
  /** When the race was decided (`performance.now()`). */
  readonly decidedAt: number;
  /** How the drain ended; unset while it runs. */
  readonly end?: HedgeDrainEnd | undefined;
  /** When the arm settled or was cut off. */
  readonly endedAt?: number | undefined;
  /** What the arm got, once its response (or error) came. */
  readonly result?: ArmResult | undefined;
}

/**
 * One arm as the race ran it: raw facts, not yet described. Diagnostics,
 * learning and metrics are each derived from these.
 */
export interface RaceArm {
  /** 0 for the primary, 1.. for the hedges in launch order. */
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly reason: HedgeArmReason;
  /** When the arm was launched (`performance.now()`). */
  readonly startedAt: number;
  /** When the arm settled or was aborted; unset while it runs, and for a drained arm (see {@link RaceArm.drain}). */
  readonly endedAt?: number | undefined;
  /** What the arm got before the race was decided. */
  readonly result?: ArmResult | undefined;
  /** Aborted when the race was decided or the caller aborted. */
  readonly aborted?: boolean | undefined;
  /** Set when the arm was left to drain after the decision. */
  readonly drain?: ArmDrain | undefined;
}

/** How a race ended. */
export type RaceOutcome =
  | {
      readonly kind: "decided";
      /** When the race started (`performance.now()`), the origin of the arms' offsets. */
      readonly startedAt: number;
      /** What the caller gets. */
      readonly result: ArmResult;
      /** The arm whose result is returned. */
      readonly returnedIndex: number;
      /** `true` when no arm won and the primary's outcome is returned by default. */
      readonly fallback: boolean;
      readonly arms: readonly RaceArm[];
      /** `true` when the strategy refused a hedge. */
      readonly hedgeRefused: boolean;
      /** One per drained arm: settles (never rejects) with that arm when its drain ends. */
      readonly drains: readonly Promise<RaceArm>[];
    }
  | { readonly kind: "aborted"; readonly startedAt: number; readonly arms: readonly RaceArm[]; readonly hedgeRefused: boolean };

/** A loser running on after its race was decided. */
interface Drain {
  readonly decidedAt: number;
  readonly timer: ReturnType<typeof setTimeout>;
  readonly done: (arm: RaceArm) => void;
  end?: HedgeDrainEnd;
  endedAt?: number;
  result?: ArmResult;
}

interface ArmState {
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly reason: HedgeArmReason;
  readonly controller: ArmAbort;
  /** The copy of the request this arm sends. */
  readonly request: PipelineRequest;
  readonly startedAt: number;
  /** Whether the request has been handed to `send` (an arm still being prepared has not). */
  sent?: boolean;
  endedAt?: number;
  result?: ArmResult;
  aborted?: boolean;
  drain?: Drain;
}

/**
 * Reads and discards the streamed body of a response that nobody will read,
 * so that its connection can go back to the pool; a body longer than
 * `maxBytes` is destroyed instead, which closes its connection. Bodies the
 * transport has already read (`bodyAsText`) need nothing.
 * @returns whether the body was read to its end (or there was none to read).
 */
function discardStreamBody(response: PipelineResponse | undefined, maxBytes: number): Promise<boolean> {
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

/**
 * Races copies of one request across regions. The primary goes out at once;
 * each further arm goes out `strategy.delayBefore(i)` after the previous one,
 * or at once on a `next` verdict. The first `win` verdict decides the race;
 * when every arm has settled without a winner, the primary's outcome is
 * returned.
 *
 * The arms still running when the race is decided are its losers. With
 * `drain`, each that has been sent and finds a drain slot free is left to
 * finish in the background, so that its connection (and TLS session) goes
 * back to the pool instead of being destroyed; it is aborted once it runs
 * `maxDrainMs` past the decision or its body passes `maxDrainBytes`. The
 * others are aborted at once. The caller's abort signal aborts every arm,
 * drained ones included, for as long as any runs.
 *
 * The returned promise rejects only when a strategy itself throws: an arm's
 * failure is a result, and a loser that settles after the race is decided
 * reaches nobody but its drain record, so no rejection goes unhandled. When
 * the race and its drains have ended no timer or listener of them remains.
 */
export function runRace(input: RaceInput): Promise<RaceOutcome> {
  const { request, targets, send, strategy, prepare, drain, onResponse } = input;
  const callerSignal = request.abortSignal;
  const raceStart = performance.now();
  const arms: ArmState[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let decided = false;
  let hedgeRefused = false;
  /** The first arm held back by a `hold` verdict, while the primary was in flight. */
  let held: number | undefined;
  let draining = 0;

  return new Promise<RaceOutcome>((resolve, reject) => {
    const stopListening = (): void => {
      callerSignal?.removeEventListener("abort", onCallerAbort);
    };

    /** Stops the timer of the next hedge, if one is set. */
    const cancelTimer = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };

    const abortArm = (arm: ArmState, now: number): void => {
      arm.aborted = true;
      arm.endedAt = now;
      arm.controller.abort();
    };

    /** Ends a drain: its slot, its timer, its record; the last one to end stops listening to the caller. */
    const endDrain = (arm: ArmState, how: HedgeDrainEnd): void => {
      const active = arm.drain;
      if (active === undefined || active.end !== undefined) return;
      active.end = how;
      clearTimeout(active.timer);
      drain?.end();
      draining -= 1;
      if (draining === 0) stopListening();
      active.done(arm);
    };

    /** Aborts a drained loser that reached a bound; it ends now, whether or not its transport ever settles. */
    const cutDrain = (arm: ArmState, how: HedgeDrainEnd): void => {
      if (arm.drain === undefined || arm.drain.end !== undefined) return;
      arm.drain.endedAt ??= performance.now();
      arm.controller.abort();
      endDrain(arm, how);
    };

    const startDrain = (arm: ArmState, settings: LoserDrain["settings"], decidedAt: number): Promise<RaceArm> =>
      new Promise<RaceArm>((done) => {
        draining += 1;
        const timer = setTimeout(() => cutDrain(arm, "timeLimit"), settings.maxDrainMs);
        // The loser's own request keeps the process alive while it runs; its bound alone must not.
        (timer as { unref?: () => void }).unref?.();
        arm.drain = { decidedAt, timer, done };
        // Node's transport reads this when the response headers arrive: a loser whose headers are still to come
        // hands its body over as a stream, which the drain reads within the byte bound. (A progress callback
        // would count the bytes too, but aborting a request under one throws from the transport's stream.)
        arm.request.streamResponseStatusCodes = new Set([Number.POSITIVE_INFINITY]);
      });

    /** A drained loser's own settlement: its response came; its body is read (within the byte bound) before the drain ends. */
    const settleDrain = (arm: ArmState, active: Drain, result: ArmResult): void => {
      if (active.end !== undefined) return;
      active.result = result;
      active.endedAt = performance.now();
      const maxBytes = drain?.settings.maxDrainBytes ?? 0;
      void discardStreamBody(result.response, maxBytes).then((complete) => {
        if (complete) endDrain(arm, "settled");
        else cutDrain(arm, "byteLimit");
      });
    };

    /** Ends the race: no more hedges; losers drain or are aborted. @returns the drains started. */
    const end = (returnedIndex: number | undefined): Promise<RaceArm>[] => {
      decided = true;
      cancelTimer();
      const now = performance.now();
      const drains: Promise<RaceArm>[] = [];
      for (const arm of arms) {
        if (arm.result !== undefined) {
          if (arm.index !== returnedIndex) void discardStreamBody(arm.result.response, drain?.settings.maxDrainBytes ?? 0);
          continue;
        }
        if (arm.index > 0) strategy.release?.(arm.index);
        // A loser not yet sent never goes out: aborting it costs no connection.
        if (returnedIndex !== undefined && drain !== undefined && arm.sent === true && drain.tryStart()) {
          drains.push(startDrain(arm, drain.settings, now));
        } else {
          abortArm(arm, now);
        }
      }
      if (draining === 0) stopListening();
      return drains;
    };

    const decide = (returnedIndex: number, fallback: boolean): void => {
      const result = arms[returnedIndex]?.result;
      if (result === undefined) throw new Error("A race was decided on an arm without a result.");
      const drains = end(returnedIndex);
      resolve({ kind: "decided", startedAt: raceStart, result, returnedIndex, fallback, arms, hedgeRefused, drains });
    };

    function onCallerAbort(): void {
      if (decided) {
        for (const arm of arms) cutDrain(arm, "callerAborted");
        return;
      }
      end(undefined);
      resolve({ kind: "aborted", startedAt: raceStart, arms, hedgeRefused });
    }

    const canLaunchMore = (): boolean => !hedgeRefused && arms.length < targets.length;

    const scheduleNext = (): void => {
      cancelTimer();
      if (!canLaunchMore()) return;
      timer = setTimeout(() => {
        timer = undefined;
        launch("threshold");
      }, strategy.delayBefore(arms.length));
    };

    const settle = (arm: ArmState, result: ArmResult): void => {
      if (arm.drain !== undefined) {
        settleDrain(arm, arm.drain, result);
        return;
      }
      if (decided || arm.aborted) return;
      arm.result = result;
      arm.endedAt = performance.now();
      if (arm.index > 0) strategy.release?.(arm.index);
      const verdict = strategy.judge({ index: arm.index, region: arm.region, result });
      const primarySettled = arms[0]?.result !== undefined;
      if (verdict === "win" || (verdict === "hold" && primarySettled)) {
        decide(arm.index, false);
        return;
      }
      if (verdict === "hold") held ??= arm.index;
      // The primary settled without winning: an answer held back for it wins now.
      if (arm.index === 0 && held !== undefined) {
        decide(held, false);
        return;
      }
      if (verdict === "next") launch(strategy.earlyLaunchReason);
      if (decided || arms.some((other) => other.result === undefined)) return;
      // Nothing is in flight: launch what is left now rather than idle until a timer fires.
      if (canLaunchMore() && launch(strategy.earlyLaunchReason)) return;
      decide(0, true);
    };

    const sendArm = async (arm: ArmState): Promise<void> => {
      let result: ArmResult;
      try {
        const preparing = prepare?.(arm.request, arm.index);
        // A synchronous preparation sends the arm in the same turn; only an asynchronous one is awaited.
        if (preparing !== undefined) {
          await preparing;
          // The race may have ended while the arm was being prepared; an arm
          // that lost before it was sent must not go out at all.
          if (arm.aborted) return;
        }
        arm.sent = true;
        const response = await send(arm.request, arm);
        onResponse?.(arm.region.name, response);
        result = { response };
      } catch (error) {
        result = { error };
      }
      try {
        settle(arm, result);
      } catch (error) {
        // A fault in a strategy must end the race with that error, not leave it to an unhandled rejection.
        if (!decided) end(undefined);
        reject(error);
      }
    };

    function launch(reason: HedgeArmReason): boolean {
      const index = arms.length;
      const region = targets[index];
      // Once the strategy has refused a hedge, it is not asked again: a budget
      // freed later must not revive a race that was already cut short.
      if (decided || hedgeRefused || region === undefined) return false;
      if (index > 0 && strategy.admit !== undefined && !strategy.admit(index)) {
        hedgeRefused = true;
        cancelTimer();
        return false;
      }
      const controller = armAbortFor(request);
      const clone = cloneRequestFor(request, region, controller.signal);
      const arm: ArmState = { index, region, reason, controller, request: clone, startedAt: performance.now() };
      arms.push(arm);
      void sendArm(arm);
      scheduleNext();
      return true;
    }

    if (callerSignal?.aborted) {
      decided = true;
      resolve({ kind: "aborted", startedAt: raceStart, arms, hedgeRefused });
      return;
    }
    callerSignal?.addEventListener("abort", onCallerAbort);
    launch("primary");
  });
}
