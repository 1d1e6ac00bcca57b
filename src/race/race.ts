import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import type { RegionEndpoint } from "../topology/regionCache.js";
import type { ArmResult } from "../cosmos/statusTables.js";
import type { HedgeArmReason, HedgeDrainEnd, HedgeSkipReason } from "../diagnostics/diagnostics.js";
import type { LoserDrain } from "./loserDrain.js";

/**
 * What a strategy makes of a settled arm: it wins; the next hedge launches
 * now; or the race waits. The primary's answer ends the race whatever the
 * verdict (`win` or not says whether it is the race's fallback): a hedge
 * wins only before it.
 */
export type Verdict = "win" | "next" | "wait";

/** An arm that has settled, as a strategy sees it. */
export interface SettledArm {
  /** 0 for the primary, 1.. for the hedges in launch order. */
  readonly index: number;
  readonly region: RegionEndpoint;
  readonly result: ArmResult;
}

/**
 * The policy-specific part of a race: when hedges launch, and which result
 * wins. The engine (`HedgingRace`) owns everything else (copies, timers,
 * aborts, drains, cleanup).
 */
export interface RaceStrategy {
  /** Milliseconds between the launch of arm `index - 1` and of arm `index` (`index` >= 1). */
  delayBefore(index: number): number;
  /** What an arm's settlement means. */
  judge(arm: SettledArm): Verdict;
  /** Why a hedge that launches early (on a hedge's `next` verdict) was sent; default `transientResult`. */
  readonly earlyLaunchReason?: HedgeArmReason;
  /**
   * Whether the primary's answer that does not win waits for the hedges in
   * flight, and launches no more: a hedged write's hedge that went out may
   * have applied the write, so its success is the write's answer, where the
   * SDK's retry of the primary would meet the write already done (a 409, a
   * 412, a 404). Unset, the primary's answer decides as it comes.
   */
  readonly primaryWaitsForHedges?: boolean;
  /**
   * Asked before hedge `index` launches; `false` refuses it, and stops all
   * further hedges unless {@link RaceStrategy.admitAfter} names a later time
   * to ask again.
   */
  admit?(index: number): boolean;
  /**
   * Asked right after `admit` refused hedge `index`: in how many
   * milliseconds to ask again (a document read, at its primary's healthy
   * tail, where its straggler evidence is full), or `undefined`, which
   * makes the refusal final.
   */
  admitAfter?(index: number): number | undefined;
  /** Called once for every admitted hedge, when it settles or is aborted. */
  release?(index: number): void;
}

/**
 * Sends one arm through the rest of the pipeline: `index` 0 is the primary,
 * the caller's own request; 1.. the hedges, in launch order.
 */
export type ArmSender = (request: PipelineRequest, index: number, region: RegionEndpoint, reason: HedgeArmReason) => Promise<PipelineResponse>;

/**
 * Everything a race needs. With `conclude`, the race's promise settles with
 * what it makes of the outcome (or rejects with what it throws) instead of
 * the outcome itself.
 */
export interface RaceInput<T = RaceOutcome> {
  /**
   * The caller's request. It goes out as the primary as it is: not copied,
   * re-pointed or re-signed; the hedges are copies of it. Only with
   * `eager` does it get an abort signal of the race's (following its own).
   */
  readonly request: PipelineRequest;
  /** Where the caller sent the request: the primary's region. */
  readonly primaryRegion: RegionEndpoint;
  /**
   * The hedges' regions in launch order, or why there are none. Asked once,
   * when the first hedge is due (the threshold passed), so that a request
   * that never hedges plans nothing.
   */
  readonly hedges: () => readonly RegionEndpoint[] | HedgeSkipReason;
  /**
   * Whether a hedge may still go to `region` as it is launched: a later
   * hedge goes after the plan was made, and a region excluded or throttled
   * since is passed over for the next one. Unset, every planned region may.
   */
  mayHedgeInto?(region: RegionEndpoint): boolean;
  readonly send: ArmSender;
  readonly strategy: RaceStrategy;
  /** Runs on each hedge (`index` >= 1) before it is sent, for example to sign it afresh. */
  readonly prepare?: ((request: PipelineRequest, index: number) => void | Promise<void>) | undefined;
  /** Leaves the losers of a decided race to finish within these bounds; `undefined` aborts them. */
  readonly drain?: LoserDrain | undefined;
  /**
   * The caller's own bound on its request, from when it was sent (`@azure/cosmos`'s per-attempt `requestTimeout`, or
   * its shorter timeout of a read under its partition-level circuit breaker). The caller stops applying it once the
   * race hands it an answer, so a primary left to drain (with a signal of the race's or not) drains no longer than
   * this from its start, whatever `drain` allows: plain, it would have been cut then. Unset, `drain` alone bounds it.
   */
  readonly callerTimeoutMs?: number | undefined;
  /**
   * Gives the primary an abort signal of the race's (following the caller's)
   * before it is sent, so that it can be aborted when it loses. Costs a
   * controller and a listener on the caller's signal for every request;
   * needed where a loser must not drain (`drain` unset, a hedged write, an
   * agent with bounded sockets). Default: `true` without `drain`.
   */
  readonly eager?: boolean | undefined;
  /** Told of every arm's response as it arrives, a drained loser's included, with the arm's region. */
  readonly onResponse?: ((region: string, response: PipelineResponse) => void) | undefined;
  /** Turns the outcome into what the race's promise settles with; unset, it settles with the outcome. */
  conclude?(outcome: RaceOutcome): T;
  /** Told when the race fails (a strategy threw), before its promise rejects with that error. */
  fail?(error: unknown): void;
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
      /** Why no hedge went out although one was due: the plan found none to send. */
      readonly skipReason?: HedgeSkipReason | undefined;
      /** One per drained arm: settles (never rejects) with that arm when its drain ends. */
      readonly drains: readonly Promise<RaceArm>[];
    }
  | {
      readonly kind: "aborted";
      readonly startedAt: number;
      readonly arms: readonly RaceArm[];
      readonly hedgeRefused: boolean;
      readonly skipReason?: HedgeSkipReason | undefined;
      /**
       * What the primary's own send failed with once the caller had aborted (its transport's `AbortError`, or an error
       * of reading its body): what the caller gets, as it would unhedged.
       */
      readonly error: unknown;
    };

