/**
 * The constants of a {@link StallDetector}. Each is a time, a share or a
 * run of answers in a row, none a count per span of time, so that a stall
 * looks the same at 30 reads a second as at 1000 (the count of slow answers
 * in a span, tried before, took a lasting tail at 100 reads a second and
 * more for a stall).
 */
export const stallDefaults = {
  /**
   * Milliseconds from a burst's first slow answer to its last beyond which
   * it is no stall, and how much later than the healthy tail a stall's
   * answer can come: a pause of the client's event loop or machine lasts a
   * few hundred milliseconds; a slowdown that lasts longer is the region's
   * and is learned as usual. An answer later than that (a straggler's)
   * takes no part.
   */
  maxStallMs: 500,
  /**
   * Answers in a row at or below the healthy tail that end a burst: a few,
   * because a healthy read sent just after a stall can answer before the
   * stall's last reads; more than a few, and the healthy tail's lone slow
   * answers at a high read rate would chain into one burst.
   */
  endAfterFastAnswers: 3,
  /** Milliseconds without a slow answer that end a burst when too few answers come to end it (a quiet client). */
  gapMs: 300,
  /** The least slow answers in a stall: one or two are the healthy tail. */
  minSlowAnswers: 3,
  /** The least share of slow answers among every answer from a stall's first slow one to its last: a stall slows nearly all. */
  minSlowShare: 0.5,
  /**
   * Milliseconds before a burst whose answers must have been calm: a stall
   * stands out of a quiet stretch, while bursts one after another are a
   * lasting slowdown seen at a low read rate.
   */
  contextMs: 2_000,
  /**
   * The largest share of slow answers in the `contextMs` before a burst for
   * it to count as a stall. A fifth: stragglers late by less than
   * `maxStallMs` are slow answers too, and a region with a lasting tail of
   * them (8 % of reads 150 ms late, beside its healthy one) must still let a
   * stall stand out; at a tenth, its stalls went uncounted and held the
   * benefit rule's delay above them for seconds (model of the mixed tail:
   * delay p50 10.9 -> 6.1 ms, p90 23.8 -> 11.0, p99 60.0 -> 56.6 ms). A
   * lasting slowdown makes about half its answers slow, or all.
   */
  maxContextSlowShare: 0.2,
} as const;

/** The `contextMs` before a burst is kept as this many slots of counts. */
const contextSlots = 8;

interface Burst {
  readonly from: number;
  /** The bound it opened with: a burst's own answers must not raise it (in a young window they would, at once). */
  readonly slowAbove: number;
  readonly calmBefore: boolean;
  lastSlowAt: number;
  answers: number;
  answersToLastSlow: number;
  slow: number;
  fastInARow: number;
}

/**
 * Tells a stall of the client (its event loop or machine paused, so that
 * every answer in flight comes late at once) from a slowdown of a region,
 * by the answers of one region and class as they are recorded. A burst
 * opens at a slow answer (above the caller's healthy tail, by no more than
 * `maxStallMs`) and ends after `endAfterFastAnswers` answers in a row that
 * are not slow, or `gapMs` without a slow one. It was a stall if it held
 * at least `minSlowAnswers` slow answers, at least `minSlowShare` of the
 * answers from its first slow one to its last, lasted no longer than
 * `maxStallMs`, and followed a calm `contextMs`. Settled lazily, when an
 * answer is offered or {@link StallDetector.settle} is called: no timer.
 */
export class StallDetector {
  /** Answers and slow answers per slot of `contextMs / contextSlots`, and which slot each entry counts. */
  private readonly slotAnswers = new Array<number>(contextSlots).fill(0);
  private readonly slotSlow = new Array<number>(contextSlots).fill(0);
  private readonly slotOf = new Array<number>(contextSlots).fill(Number.NEGATIVE_INFINITY);
  private burst: Burst | undefined;
  /** The bucket epochs and latencies of the open burst's slow answers, while it may still be a stall. */
  private readonly epochs: number[] = [];
  private readonly latencies: number[] = [];

  /** @param onStall - called with the bucket epochs and latencies of a stall's slow answers, once it has ended. */
  constructor(private readonly onStall: (epochs: readonly number[], latencies: readonly number[]) => void) {}

  /** Offers an answer recorded at `now` in bucket `epoch`, slow above `slowAboveMs` (the bound an open burst opened with wins). */
  answer(now: number, epoch: number, latencyMs: number, slowAboveMs: number): void {
    this.settle(now);
    let { burst } = this;
    const slowAbove = burst?.slowAbove ?? slowAboveMs;
    if (latencyMs > slowAbove + stallDefaults.maxStallMs) return;
    const slow = latencyMs > slowAbove;
    const slot = Math.floor(now / (stallDefaults.contextMs / contextSlots));
    if (slow && burst !== undefined && now - burst.from > stallDefaults.maxStallMs) {
      // Too long for a stall, whatever it held.
      this.end(false);
      burst = undefined;
    }
    if (slow && burst === undefined) {
      burst = { from: now, slowAbove, calmBefore: this.contextIsCalm(slot), lastSlowAt: now, answers: 0, answersToLastSlow: 0, slow: 0, fastInARow: 0 };
      this.burst = burst;
    }
    this.count(slot, slow);
    if (burst === undefined) return;
    burst.answers += 1;
    if (!slow) {
      burst.fastInARow += 1;
      if (burst.fastInARow >= stallDefaults.endAfterFastAnswers) this.end(true);
      return;
    }
    burst.slow += 1;
    burst.fastInARow = 0;
    burst.lastSlowAt = now;
    burst.answersToLastSlow = burst.answers;
    // Only a burst that may still be a stall keeps its latencies: a lasting slowdown keeps none after its first burst.
    if (burst.calmBefore) {
      this.epochs.push(epoch);
      this.latencies.push(latencyMs);
    }
  }

  /** Ends the open burst if `gapMs` have passed since its last slow answer. */
  settle(now: number): void {
    if (this.burst !== undefined && now - this.burst.lastSlowAt > stallDefaults.gapMs) this.end(true);
  }

  /** Ends the open burst, reporting it if it was a stall (`mayBeStall`: it did not outlast `maxStallMs`). */
  private end(mayBeStall: boolean): void {
    const { burst } = this;
    if (
      mayBeStall &&
      burst !== undefined &&
      burst.calmBefore &&
      burst.slow >= stallDefaults.minSlowAnswers &&
      burst.slow >= stallDefaults.minSlowShare * burst.answersToLastSlow
    ) {
      this.onStall(this.epochs, this.latencies);
    }
    this.burst = undefined;
    this.epochs.length = 0;
    this.latencies.length = 0;
  }

  private count(slot: number, slow: boolean): void {
    const index = slot % contextSlots;
    if (this.slotOf[index] !== slot) {
      this.slotOf[index] = slot;
      this.slotAnswers[index] = 0;
      this.slotSlow[index] = 0;
    }
    this.slotAnswers[index] = (this.slotAnswers[index] ?? 0) + 1;
    if (slow) this.slotSlow[index] = (this.slotSlow[index] ?? 0) + 1;
  }

  /** Whether the `contextMs` up to `slot` (its answers so far included) held few slow answers, or none at all. */
  private contextIsCalm(slot: number): boolean {
    let answers = 0;
    let slow = 0;
    for (let i = 0; i < contextSlots; i++) {
      const at = this.slotOf[i] ?? Number.NEGATIVE_INFINITY;
      if (at <= slot - contextSlots || at > slot) continue;
      answers += this.slotAnswers[i] ?? 0;
      slow += this.slotSlow[i] ?? 0;
    }
    return slow <= stallDefaults.maxContextSlowShare * answers;
  }
}
