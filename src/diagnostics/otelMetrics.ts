import type { OperationKind } from "../cosmos/operationKind.js";
import type { HedgeArmDiagnostics, HedgeDiagnostics } from "./diagnostics.js";
import { logger } from "../log.js";
import { packageInfo } from "../packageInfo.js";
import { whenFinal } from "./final.js";
import { useOpenTelemetryContext } from "./traceContext.js";
import type { OpenTelemetryContextApi } from "./traceContext.js";

/**
 * The names of the OpenTelemetry instruments, under `azure.cosmosdb.client.`
 * as the Azure SDKs' Cosmos DB metrics are (Rust's
 * `azure.cosmosdb.client.operation.hedged` among them).
 */
export const hedgingMetricNames = {
  /** Counter, `{request}`: requests that sent at least one hedge (Rust's name for the same count). */
  hedged: "azure.cosmosdb.client.operation.hedged",
  /** Counter, `{hedge}`: hedges sent, by the region each went to. */
  hedges: "azure.cosmosdb.client.hedging.hedges",
  /** Counter, `{hedge}`: hedges whose outcome was returned. */
  hedgesWon: "azure.cosmosdb.client.hedging.hedges_won",
  /** Histogram, `s`: the time from a request's start to each of its hedges. */
  delay: "azure.cosmosdb.client.hedging.delay",
  /** Counter, `{request_unit}`: request units of the arms whose outcome was not returned, drained losers' once they end. */
  extraRequestCharge: "azure.cosmosdb.client.hedging.extra_request_charge",
  /** Counter, `{request}`: requests that sent fewer hedges than planned because the hedge budget was spent. */
  budgetRefusals: "azure.cosmosdb.client.hedging.budget_refusals",
  /** Counter, `{drain}`: losers left to finish in the background, counted when they end, by how. */
  drains: "azure.cosmosdb.client.hedging.drains",
} as const;

/**
 * The attribute names: the OpenTelemetry semantic conventions' where they
 * define one (`db.system.name`, `db.operation.name`, `cloud.region`), this
 * package's under `azure.cosmosdb.hedging.` for the rest.
 */
export const hedgingMetricAttributes = {
  /** Always `"azure.cosmosdb"`. */
  dbSystemName: "db.system.name",
  /** The operation, as the semantic conventions name Cosmos DB operations (`read_item`, `query_items`, ...). */
  dbOperationName: "db.operation.name",
  /** The region a hedge or an arm went to. */
  region: "cloud.region",
  /** The region of the request's primary arm. */
  primaryRegion: "azure.cosmosdb.hedging.primary_region",
  /** Why a hedge went: `threshold` or `transientResult`. */
  reason: "azure.cosmosdb.hedging.reason",
  /** How a request that hedged ended: `hedgeWon`, `primaryWon`, `primaryOutcome` or `aborted`. */
  terminalState: "azure.cosmosdb.hedging.terminal_state",
  /** How a drain ended: `settled`, `timeLimit`, `byteLimit` or `callerAborted`. */
  drainEnd: "azure.cosmosdb.hedging.drain_end",
} as const;

/** The semantic conventions' `db.operation.name` of each request kind; the rest in snake case, as they recommend. */
const operationNames: Record<OperationKind, string> = {
  accountRead: "read_database_account",
  collectionRead: "read_container",
  partitionKeyRangeReadFeed: "read_partition_key_ranges",
  partitionKeyRangeReadFeedContinuation: "read_partition_key_ranges",
  pointRead: "read_item",
  query: "query_items",
  queryPlan: "query_plan",
  readFeed: "read_all_items",
  changeFeed: "query_change_feed",
  batch: "execute_batch",
  create: "create_item",
  upsert: "upsert_item",
  replace: "replace_item",
  patch: "patch_item",
  delete: "delete_item",
  other: "other",
};

type Attributes = Record<string, string>;

/** The parts of `@opentelemetry/api` this module uses, declared here so that the package's types never need it. */
interface Counter {
  add(value: number, attributes?: Attributes): void;
}
interface Histogram {
  record(value: number, attributes?: Attributes): void;
}
interface InstrumentOptions {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}
interface Meter {
  createCounter(name: string, options?: InstrumentOptions): Counter;
  createHistogram(name: string, options?: InstrumentOptions): Histogram;
}
interface OpenTelemetryApi extends OpenTelemetryContextApi {
  metrics: { getMeterProvider(): { getMeter(name: string, version?: string): Meter } };
  createNoopMeter(): Meter;
}

interface Instruments {
  readonly hedged: Counter;
  readonly hedges: Counter;
  readonly hedgesWon: Counter;
  readonly delay: Histogram;
  readonly extraRequestCharge: Counter;
  readonly budgetRefusals: Counter;
  readonly drains: Counter;
}

function createInstruments(meter: Meter): Instruments {
  return {
    hedged: meter.createCounter(hedgingMetricNames.hedged, { unit: "{request}", description: "Requests that sent at least one cross-region hedge." }),
    hedges: meter.createCounter(hedgingMetricNames.hedges, { unit: "{hedge}", description: "Hedges sent, by the region each went to." }),
    hedgesWon: meter.createCounter(hedgingMetricNames.hedgesWon, { unit: "{hedge}", description: "Hedges whose outcome was returned." }),
    delay: meter.createHistogram(hedgingMetricNames.delay, {
      unit: "s",
      description: "Time from a request's start to each of its hedges.",
      advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] },
    }),
    extraRequestCharge: meter.createCounter(hedgingMetricNames.extraRequestCharge, {
      unit: "{request_unit}",
      description: "Request units of the arms whose outcome was not returned: what hedging cost.",
    }),
    budgetRefusals: meter.createCounter(hedgingMetricNames.budgetRefusals, {
      unit: "{request}",
      description: "Requests that sent fewer hedges than planned because the hedge budget was spent.",
    }),
    drains: meter.createCounter(hedgingMetricNames.drains, { unit: "{drain}", description: "Losers left to finish in the background, by how they ended." }),
  };
}

/** The API once loaded, the provider the instruments were made from, and the instruments (none while the provider is a no-op). */
interface Loaded {
  readonly api: OpenTelemetryApi;
  readonly noopMeter: unknown;
  provider?: object;
  instruments?: Instruments | undefined;
}

let loading: Promise<void> | undefined;
let loaded: Loaded | undefined;

/**
 * Starts loading `@opentelemetry/api`, once per process, when the first
 * hedging client is created. Without the package nothing more happens; with
 * it, records are counted into the instruments of the global meter
 * provider, from the moment the import has resolved, and pending reads keep
 * the active tracing context (see `traceContext`).
 */
export function loadOpenTelemetry(): void {
  loading ??= import("@opentelemetry/api").then(
    (module: unknown) => {
      // The namespace has every export; an ES module's default export holds only the API objects (a bundler may hand over either).
      const namespace = module as Partial<OpenTelemetryApi> & { default?: Partial<OpenTelemetryApi> };
      const api = (typeof namespace.createNoopMeter === "function" ? namespace : (namespace.default ?? namespace)) as OpenTelemetryApi;
      if (typeof api.context?.active === "function" && typeof api.context.with === "function") useOpenTelemetryContext(api);
      if (typeof api.metrics?.getMeterProvider !== "function" || typeof api.createNoopMeter !== "function") return;
      loaded = { api, noopMeter: api.createNoopMeter().constructor };
    },
    () => undefined,
  );
}

/** The instruments of the global meter provider now, or `undefined` when there is none (or the API is absent). */
function instruments(): Instruments | undefined {
  const state = loaded;
  if (state === undefined) return undefined;
  const provider = state.api.metrics.getMeterProvider();
  if (provider !== state.provider) {
    // A provider registered after the first client (or replaced) is followed; a no-op one costs no attribute object.
    state.provider = provider;
    const meter = provider.getMeter(packageInfo.name, packageInfo.version);
    state.instruments = meter.constructor === state.noopMeter ? undefined : createInstruments(meter);
  }
  return state.instruments;
}

function baseAttributes(record: HedgeDiagnostics): Attributes {
  const attributes: Attributes = { [hedgingMetricAttributes.dbSystemName]: "azure.cosmosdb", [hedgingMetricAttributes.dbOperationName]: operationNames[record.operation] ?? "other" };
  if (record.primaryRegion !== undefined) attributes[hedgingMetricAttributes.primaryRegion] = record.primaryRegion;
  return attributes;
}

function armAttributes(base: Attributes, arm: HedgeArmDiagnostics): Attributes {
  return { ...base, [hedgingMetricAttributes.region]: arm.region };
}

/** The charge of a losing arm, once known. */
function countExtraCharge(meters: Instruments, base: Attributes, arm: HedgeArmDiagnostics): void {
  if (arm.outcome !== "returned" && arm.requestCharge !== undefined && arm.requestCharge > 0) meters.extraRequestCharge.add(arm.requestCharge, armAttributes(base, arm));
}

/** Counts the drained arms of a record once they have ended: how each ended and what it cost. */
function countDrains(meters: Instruments, base: Attributes, record: HedgeDiagnostics): void {
  for (const arm of record.arms) {
    if (arm.outcome !== "drained") continue;
    meters.drains.add(1, { ...armAttributes(base, arm), [hedgingMetricAttributes.drainEnd]: arm.drainEnd ?? "unknown" });
    countExtraCharge(meters, base, arm);
  }
}

/**
 * Counts a published record into the OpenTelemetry instruments, when
 * `@opentelemetry/api` is installed and a meter provider registered;
 * otherwise returns at once. A race whose drained losers still run is
 * counted again for them when they end.
 */
export function recordHedgingMetrics(record: HedgeDiagnostics): void {
  const meters = instruments();
  if (meters === undefined) return;
  try {
    if (!record.hedgeFired && record.skipReason !== "budgetExhausted") return;
    const base = baseAttributes(record);
    if (record.skipReason === "budgetExhausted") meters.budgetRefusals.add(1, base);
    if (!record.hedgeFired) return;
    meters.hedged.add(1, { ...base, [hedgingMetricAttributes.terminalState]: record.terminalState });
    for (const arm of record.arms) {
      if (arm.reason !== "primary") {
        const attributes = { ...armAttributes(base, arm), [hedgingMetricAttributes.reason]: arm.reason };
        meters.hedges.add(1, attributes);
        meters.delay.record(arm.startOffsetMs / 1000, attributes);
        if (record.hedgeWon && arm.outcome === "returned") meters.hedgesWon.add(1, attributes);
      }
      if (arm.outcome !== "drained") countExtraCharge(meters, base, arm);
    }
    if (!record.final) void whenFinal(record).then((completed) => guarded(() => countDrains(meters, base, completed)));
  } catch (error) {
    ignored(error);
  }
}

/** A meter of the application's must never break the request it counts, nor leave a rejection unhandled. */
function ignored(error: unknown): void {
  logger.warning(`Recording hedging metrics failed and was ignored: ${error instanceof Error ? error.name : typeof error}`);
}

function guarded(count: () => void): void {
  try {
    count();
  } catch (error) {
    ignored(error);
  }
}
