import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";

/**
 * The request units a hedging client's reads cost, drained losers included.
 * A read's response carries its diagnostics as they stood when it returned;
 * a loser left to drain adds its charge to the same record (the one
 * `onDiagnostics` received) when its response arrives, later. So the ledger
 * keeps the records, with when each arrived, and sums them once the drains
 * have ended.
 */
export class ChargeLedger {
  private records: { receivedAt: number; record: HedgeDiagnostics }[] = [];

  /** Give this to the hedging options. */
  readonly onDiagnostics = (record: HedgeDiagnostics): void => {
    if (record.policy === "crossRegion") this.records.push({ receivedAt: performance.now(), record });
  };

  /** Forgets what came before, such as a warm-up. */
  clear(): void {
    this.records = [];
  }

  /**
   * Waits until every drained loser has ended (at most `limitMs`, beyond the
   * policy's own 5 s drain bound), then returns the request units of every
   * arm that answered and how many drains were still running.
   */
  async settledCharge(limitMs = 6000): Promise<{ charge: number; drainsRunning: number }> {
    const deadline = performance.now() + limitMs;
    let running = this.drainsRunning();
    while (running > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      running = this.drainsRunning();
    }
    return { charge: this.records.reduce((sum, { record }) => sum + record.totalRequestCharge, 0), drainsRunning: running };
  }

  /**
   * The request units of the records that arrived in each second from
   * `startMs` (a `performance.now()` reading), drained losers included once
   * they have ended: call it after `settledCharge`. A record arrives when its
   * race is decided, so this buckets cost by when each read was answered.
   */
  chargeBySecond(startMs: number): Map<number, number> {
    const bySecond = new Map<number, number>();
    for (const { receivedAt, record } of this.records) {
      const second = Math.floor((receivedAt - startMs) / 1000);
      bySecond.set(second, (bySecond.get(second) ?? 0) + record.totalRequestCharge);
    }
    return bySecond;
  }

  private drainsRunning(): number {
    return this.records.reduce(
      (count, { record }) => count + record.arms.filter((arm) => arm.outcome === "drained" && arm.drainEnd === undefined).length,
      0,
    );
  }
}
