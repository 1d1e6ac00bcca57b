import { AsyncLocalStorage } from "node:async_hooks";
import type { HedgingDetection, OperationDetection } from "./detection.js";
import { mergeDetections } from "./detection.js";
import { whenFinal } from "./final.js";
import { recordHedgingMetrics } from "./otelMetrics.js";
import { describe } from "../options.js";
import type { HedgeDiagnostics } from "./diagnostics.js";

/** What {@link collectHedgeDiagnostics} resolves to. */
export interface CollectedHedgeDiagnostics<T> {
  /** What the block resolved to. */
  result: T;
  /**
   * The diagnostics of every request a hedging policy considered while the
   * block ran, in the order the requests finished.
   */
  diagnostics: HedgeDiagnostics[];
  /**
   * The hedging detection record of every `@azure/cosmos` operation the
   * block started (the pages of a feed, its query plan, the metadata reads
   * the SDK made for it) taken together: whether any hedged, every request
   * in the order it went out, every reply in the order it came, and their
   * request charge. Empty for requests that did not come from a
   * `CosmosClient` made with `withHedging`.
   */
  detection: HedgingDetection;
  /**
   * Settles (never rejects) once every record is final: the drained losers
   * of the block's races have ended and their charges are in
   * `diagnostics` and `detection`.
   */
  settled: Promise<void>;
}

/** One running block: its records, and the block around it, which sees them too. */
interface Collection {
  readonly records: HedgeDiagnostics[];
  readonly operations: OperationDetection[];
  readonly outer: Collection | undefined;
  open: boolean;
}

const scope = new AsyncLocalStorage<Collection>();
/** Whether any block of {@link collectHedgeDiagnostics} has run in this process: until one has, no context is in one. */
let collectedEver = false;
const collectedByError = new WeakMap<object, HedgeDiagnostics[]>();

/**
 * Adds a record to every block of {@link collectHedgeDiagnostics} that the
 * current asynchronous context runs in, and counts it into the
 * OpenTelemetry metrics when an application has a meter provider. Called where the policies publish
 * diagnostics, which is in the context of the call that made the request.
 */
export function recordForCollectors(diagnostics: HedgeDiagnostics): void {
  recordHedgingMetrics(diagnostics);
  if (!collectedEver) return;
  for (let collection = scope.getStore(); collection !== undefined; collection = collection.outer) {
    if (collection.open) collection.records.push(diagnostics);
  }
}

/** Whether the current asynchronous context runs in a block of {@link collectHedgeDiagnostics}, which wants every record. */
export function collecting(): boolean {
  return collectedEver && scope.getStore() !== undefined;
}

/** Adds a starting `@azure/cosmos` operation to every block it runs in, as {@link recordForCollectors} does a record. */
export function recordOperationForCollectors(operation: OperationDetection): void {
  if (!collectedEver) return;
  for (let collection = scope.getStore(); collection !== undefined; collection = collection.outer) {
    if (collection.open) collection.operations.push(operation);
  }
}

function close(collection: Collection): HedgeDiagnostics[] {
  collection.open = false;
  return collection.records;
}

/**
 * Runs `fn` and collects the {@link HedgeDiagnostics} of every request a
 * hedging policy considered while it ran: the query plan and every page of
 * a query, each request of a bulk or batch operation, the metadata reads.
 * This is the way to see what hedging did for calls whose response keeps no
 * headers (`query(...).fetchAll()`, iterators, bulk), where
 * `getHedgeDiagnostics(response.headers)` finds nothing.
 *
 * Blocks are scoped with `AsyncLocalStorage`: concurrent blocks never see
 * each other's requests, and a block inside another adds its records to
 * both. A request counts when it finishes before `fn` settles; a request
 * `fn` started and did not wait for is left out. A request that the
 * client shares between callers (a cache load another block started) counts
 * for the block that started it.
 *
 * @returns what `fn` resolved to, the records in the order the requests
 * finished, the hedging detection record of the block's operations, and a
 * promise of the moment every record is final.
 * @throws what `fn` threw or rejected with, unchanged; when that is an object,
 * {@link getCollectedHedgeDiagnostics} reads the records collected until then from it.
 *
 * @example
 * ```ts
 * const { result, diagnostics } = await collectHedgeDiagnostics(() => container.items.query("SELECT * FROM c").fetchAll());
 * console.log(result.resources.length, diagnostics.filter((record) => record.hedgeWon).length);
 * ```
 */
export async function collectHedgeDiagnostics<T>(fn: () => T | PromiseLike<T>): Promise<CollectedHedgeDiagnostics<Awaited<T>>> {
  if (typeof fn !== "function") throw new TypeError(`fn must be a function; got ${describe(fn)}.`);
  const collection: Collection = { records: [], operations: [], outer: scope.getStore(), open: true };
  let result: Awaited<T>;
  try {
    collectedEver = true;
    result = await scope.run(collection, fn);
  } catch (error) {
    const diagnostics = close(collection);
    if (typeof error === "object" && error !== null) collectedByError.set(error, diagnostics);
    throw error;
  }
  const diagnostics = close(collection);
  const detection = mergeDetections(collection.operations);
  const settled = Promise.all([...diagnostics.map(whenFinal), detection.settled]).then(() => undefined);
  return { result, diagnostics, detection, settled };
}

/**
 * The diagnostics that {@link collectHedgeDiagnostics} collected before its
 * block failed with `error`, or `undefined` when `error` did not come out of
 * such a block (or is not an object, which cannot carry them). When blocks
 * are nested, the outermost one the error left wins: its records include the
 * inner ones.
 */
export function getCollectedHedgeDiagnostics(error: unknown): HedgeDiagnostics[] | undefined {
  return typeof error === "object" && error !== null ? collectedByError.get(error) : undefined;
}
