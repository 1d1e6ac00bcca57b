import type { HedgeDiagnostics } from "./diagnostics.js";

/** The records whose drained arms are still running, each with the promise of its completion. */
const completions = new WeakMap<HedgeDiagnostics, Promise<HedgeDiagnostics>>();

/**
 * Marks a record final once every completion of its drained arms has run
 * (each completes the arm's entry and adds its charge). Completions never
 * reject; a record the caller froze keeps `final: false`, and its promise
 * still settles.
 */
export function finalWhen(record: HedgeDiagnostics, drainsCompleted: readonly Promise<unknown>[]): void {
  completions.set(
    record,
    Promise.all(drainsCompleted).then(() => {
      try {
        record.final = true;
      } catch {
        // A frozen record keeps its snapshot.
      }
      return record;
    }),
  );
}

/**
 * Waits until a {@link HedgeDiagnostics} record is final: every drained
 * loser of its race has ended, its status, duration and request charge are
 * in the record, and `totalRequestCharge` is the race's true cost.
 * @returns a promise that settles (never rejects) with the record itself,
 * at once when `record.final` is already `true`. A copy parsed from the
 * `x-cosmos-hedging-diagnostics` header is a snapshot of the moment the
 * race was decided and settles as it is; `getHedgeDiagnostics` on the
 * response, its headers or the error returns the live record.
 *
 * @example
 * ```ts
 * const record = getHedgeDiagnostics(response);
 * if (record !== undefined) console.log((await whenFinal(record)).totalRequestCharge, "RU in all");
 * ```
 */
export function whenFinal(record: HedgeDiagnostics): Promise<HedgeDiagnostics> {
  return completions.get(record) ?? Promise.resolve(record);
}
