import { BulkOperationType, ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions, OperationInput } from "@azure/cosmos";
import type { HedgingHttpClient, HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { documentWriteKinds } from "../../src/cosmos/operationKind.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { startEmulator } from "../emulator/index.js";
import type { Emulator, EmulatorOptions, FaultHandle, FaultRule, RecordedRequest } from "../emulator/index.js";
import { seedContainer } from "../support/cosmos.js";

/**
 * The differential harness: one operation, run through the real
 * `@azure/cosmos` `CosmosClient` by a plain client and by a `withHedging`
 * client against the same emulator and the same fault rule, so that what the
 * hedged client did can be judged against what the SDK alone would have done.
 *
 * Runs that share an emulator stay apart by their user agent: each client
 * gets a `userAgentSuffix` of its own, every fault rule of a run applies only
 * to requests carrying it ({@link FaultRule.ifHeaderValue}), and a run's
 * requests are read from the emulator's record by it. So cases run at once
 * and still each see their fault from its initial state.
 */

/** The regions of every account, in the order every client prefers them: the first is "the preferred region" a fault hits. */
export const regionNames = ["East US", "West US", "North Europe"] as const;
export const preferredRegion = regionNames[0];

/** The database and containers of every emulated account: reads never change `reads`, so feeds over it are the same in every run. */
export const databaseId = "db";
export const readsContainerId = "reads";
export const writesContainerId = "writes";

/** Six documents in three logical partitions: feeds of two items a page have three pages. */
export const seededItems = Array.from({ length: 6 }, (_, i) => ({ id: `r${i}`, pk: `p${i % 3}`, v: i }));

/** The partition key of every document the write operations touch. */
const writePartition = "w";

/** A fault is "far" from the emulator's latency (a few ms): outcomes never hinge on a close race. */
export const slowFaultMs = 3_000;
/** The per-attempt timeout of the hung-region cases. */
export const hungRequestTimeoutMs = 1_000;
/** The per-attempt timeout of every other case: well above {@link slowFaultMs}. */
export const defaultRequestTimeoutMs = 10_000;
/** How much slower than plain a hedged median may be: the noise of a loaded machine, far below every fault. */
export const latencyMarginMs = 250;

/** The kinds of account the matrix covers; each has one emulator, reused by its cases. */
export type AccountKind = "singleWrite" | "multiWrite" | "multiWriteHedged" | "ppaf" | "multiPartition";

/** The operations of the matrix, each as a user calls it. */
export type OperationName =
  | "pointRead"
  | "querySinglePartition"
  | "queryCrossPartition"
  | "queryFanOut"
  | "readAll"
  | "changeFeed"
  | "create"
  | "upsert"
  | "replace"
  | "patch"
  | "delete"
  | "batch"
  | "bulk";

/** What the preferred region does to the operation's requests. */
export type FaultName = "slow" | "503" | "410" | "429" | "hung" | "reset" | "flapping";

export const accountKinds: readonly AccountKind[] = ["singleWrite", "multiWrite", "multiWriteHedged", "ppaf", "multiPartition"];
export const operationNames: readonly OperationName[] = [
  "pointRead",
  "querySinglePartition",
  "queryCrossPartition",
  "readAll",
  "changeFeed",
  "create",
  "upsert",
  "replace",
  "patch",
  "delete",
  "batch",
  "bulk",
];
export const faultNames: readonly FaultName[] = ["slow", "503", "410", "429", "hung", "reset", "flapping"];
/**
 * The cross-partition query the SDK plans and fans out range by range
 * (`forceQueryPlan`), each range paged with a continuation of its own: on a
 * container of several ranges (the `multiPartition` account), not one of
 * {@link operationNames}.
 */
export const fanOutQuery: OperationName = "queryFanOut";
/** The operations that read a feed page by page. */
export const pagedOperations: ReadonlySet<OperationName> = new Set(["querySinglePartition", "queryCrossPartition", "queryFanOut", "readAll", "changeFeed"]);

/** One cell of the matrix. */
export interface DifferentialCase {
  readonly account: AccountKind;
  readonly operation: OperationName;
  readonly fault: FaultName;
  /** `connectionPolicy.enablePartitionLevelCircuitBreaker` of both clients. */
  readonly circuitBreaker: boolean;
  /** A paged operation whose first page is read before the fault is installed. */
  readonly betweenPages: boolean;
  /** Many operations at once under a budget without a floor, judged against `1 + maxExtraLoad` rather than 2x. */
  readonly busy: boolean;
}

/** The account settings and hedging options of each account kind. */
const accounts: Record<AccountKind, { emulator: EmulatorOptions; hedging: HedgingOptions; shares: AccountKind }> = {
  singleWrite: { emulator: {}, hedging: {}, shares: "singleWrite" },
  multiWrite: { emulator: { multipleWriteLocations: true }, hedging: {}, shares: "multiWrite" },
  multiWriteHedged: { emulator: { multipleWriteLocations: true }, hedging: { crossRegion: { enableMultiWriteRegionHedge: true } }, shares: "multiWrite" },
  ppaf: { emulator: { perPartitionFailover: true }, hedging: {}, shares: "ppaf" },
  // Every container split in two partition key ranges, as a container is once it outgrows one physical partition.
  multiPartition: { emulator: { partitionKeyRanges: 2 }, hedging: {}, shares: "multiPartition" },
};

/** The emulator an account kind runs on: the two multi-write kinds share one. */
export function emulatorKindOf(account: AccountKind): AccountKind {
  return accounts[account].shares;
}

/** The budget of a busy client: no floor, so that the share alone bounds its hedges. */
export const busyBudget = { maxExtraLoad: 0.15, minHedgesPerSecond: 0 } as const;
/** How many operations a busy run sends at once. */
export const busyOperations = 30;

/**
 * The step between a case's hedges: far above the emulator's latency on a
 * loaded machine, so that whether a further hedge goes never hinges on how
 * fast the first hedge's region answered. The default threshold (500 ms)
 * stays; a hedge launched by a transient result is not held by the step.
 */
export const matrixThresholdStepMs = 5_000;

/** The hedging options a case's hedged client gets. */
export function hedgingOptionsOf(testCase: DifferentialCase): HedgingOptions {
  const base = accounts[testCase.account].hedging;
  const crossRegion = typeof base.crossRegion === "object" ? base.crossRegion : {};
  return { ...base, crossRegion: { ...crossRegion, thresholdStep: matrixThresholdStepMs, ...(testCase.busy ? { budget: busyBudget } : {}) } };
}

/** The rule a fault installs on the preferred region, before it is scoped to one run. */
export function faultRuleOf(fault: FaultName): FaultRule {
  switch (fault) {
    case "slow":
      return { delayMs: slowFaultMs };
    case "503":
      return { status: 503 };
    case "410":
      return { status: 410 };
    case "429":
      // Two throttled answers, then service: the SDK's own retries get through, after waiting as told.
      return { status: 429, substatus: 3200, headers: { "x-ms-retry-after-ms": "500" }, count: 2 };
    case "hung":
      return { delayMs: 60_000 };
    case "reset":
      // Two resets, then service: the SDK retries a reset read in the same region, a second apart.
      return { connectionReset: true, count: 2 };
    case "flapping":
      // Every other request fails: the 1st, 3rd, 5th...
      return { status: 503, every: 2 };
  }
}

/** The per-attempt timeout both clients of a case get. */
export function requestTimeoutOf(fault: FaultName): number {
  return fault === "hung" ? hungRequestTimeoutMs : defaultRequestTimeoutMs;
}

/** The request kinds an operation sends, which its fault applies to. */
export function operationKindsOf(operation: OperationName): OperationKind[] {
  switch (operation) {
    case "pointRead":
      return ["pointRead"];
    case "querySinglePartition":
      return ["query"];
    // @azure/cosmos 4.10.1 reads all items with a query (`SELECT * from c`), not a read feed.
    case "queryCrossPartition":
    case "queryFanOut":
    case "readAll":
      return ["query", "queryPlan"];
    case "changeFeed":
      return ["changeFeed"];
    case "bulk":
    case "batch":
      return ["batch"];
    default:
      return [operation];
  }
}

/** A readable, unique name of a case. */
export function caseName(testCase: DifferentialCase): string {
  const extras = [
    testCase.circuitBreaker ? "circuit breaker" : undefined,
    testCase.betweenPages ? "fault between pages" : undefined,
    testCase.busy ? `busy (${busyOperations} at once)` : undefined,
  ].filter((extra) => extra !== undefined);
  return `${testCase.account} / ${testCase.operation} / ${testCase.fault}${extras.length > 0 ? ` / ${extras.join(", ")}` : ""}`;
}

/** One emulated account, seeded, with a fault-free client that prepares and checks documents. */
export interface AccountEnv {
  readonly kind: AccountKind;
  readonly emulator: Emulator;
  /** A plain client whose requests no rule meets. */
  readonly setup: Container;
  close(): Promise<void>;
}

/** Starts and seeds the emulator of an account kind. */
export async function startAccount(kind: AccountKind): Promise<AccountEnv> {
  const emulator = await startEmulator({ ...accounts[kind].emulator, regions: regionNames.map((name) => ({ name })) });
  const client = new CosmosClient({
    endpoint: emulator.endpoint,
    key: emulator.key,
    userAgentSuffix: "differential-setup",
    connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: [...regionNames] },
  });
  await seedContainer(client, { database: databaseId, container: readsContainerId, items: [...seededItems] });
  await seedContainer(client, { database: databaseId, container: writesContainerId });
  return {
    kind,
    emulator,
    setup: client.database(databaseId).container(writesContainerId),
    async close() {
      client.dispose();
      await emulator.close();
    },
  };
}

/** What a run did for the caller: a normalized answer, or the class of the error it threw. */
export type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly errorClass: string; readonly detail: string };

/**
 * The class of an error an operation threw: the status class of a service
 * answer (`"4xx"`, `"5xx"`; 408 and 449 are the SDK's timeouts and retries
 * and count as they are), or what else went wrong.
 */
export function errorClassOf(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (typeof code === "number") return `${Math.floor(code / 100)}xx`;
  if (name === "AbortError") return "aborted";
  if (typeof code === "string") return "network";
  return "other";
}

function describeError(error: unknown): string {
  const { code, substatus, message } = (error ?? {}) as { code?: unknown; substatus?: unknown; message?: unknown };
  return `${String(code)}${substatus !== undefined ? `/${String(substatus)}` : ""}: ${String(message).slice(0, 160)}`;
}

/** A document as the caller wrote it: system properties dropped, the run's own tag replaced, so that two runs compare. */
export function userFields(document: unknown, tag: string): unknown {
  if (document === null || typeof document !== "object") return document;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(document as Record<string, unknown>)) {
    if (key.startsWith("_")) continue;
    kept[key] = typeof value === "string" && tag !== "" ? value.split(tag).join("RUN") : value;
  }
  return kept;
}

function sortedDocuments(documents: readonly unknown[], tag: string): unknown[] {
  return documents
    .map((document) => userFields(document, tag))
    .sort((a, b) => String((a as { id?: unknown }).id).localeCompare(String((b as { id?: unknown }).id)));
}

/** What an operation needs from its run. */
export interface OperationContext {
  readonly reads: Container;
  readonly writes: Container;
  /** The run's tag, in the ids of the documents it writes. */
  readonly tag: string;
  /** Which repetition of the run this is. */
  readonly rep: number;
  /** Called once a paged operation has its first page. */
  readonly afterFirstPage: () => void;
  /** Aborts the operation at its deadline ({@link operationDeadlineMs}), for the SDK calls that take a signal. */
  readonly abortSignal: AbortSignal;
}

interface OperationSpec {
  /** Documents the fault-free setup client writes before the operation (ids). */
  prepare(tag: string, rep: number): string[];
  /** The ids whose final state in the service is compared after the run. */
  touched(tag: string, rep: number): string[];
  run(context: OperationContext): Promise<unknown>;
}

const writeId = (tag: string, rep: number, suffix = ""): string => `${tag}-${rep}${suffix}`;

async function drainQuery<T>(iterator: { hasMoreResults(): boolean; fetchNext(): Promise<{ resources: T[] }> }, afterFirstPage: () => void): Promise<T[]> {
  const all: T[] = [];
  let pages = 0;
  while (iterator.hasMoreResults()) {
    const { resources } = await iterator.fetchNext();
    all.push(...resources);
    if (++pages === 1) afterFirstPage();
    if (pages > 50) throw new Error("more than 50 pages: the feed does not end");
  }
  return all;
}

const operations: Record<OperationName, OperationSpec> = {
  pointRead: {
    prepare: () => [],
    touched: () => [],
    async run({ reads, rep, abortSignal }) {
      const item = seededItems[(rep + 1) % seededItems.length]!;
      const response = await reads.item(item.id, item.pk).read({ abortSignal });
      return { status: response.statusCode, document: userFields(response.resource, "") };
    },
  },
  querySinglePartition: {
    prepare: () => [],
    touched: () => [],
    async run({ reads, afterFirstPage, abortSignal }) {
      const query = { query: "SELECT * FROM c WHERE c.pk = @pk", parameters: [{ name: "@pk", value: "p0" }] };
      const iterator = reads.items.query(query, { partitionKey: "p0", maxItemCount: 1, abortSignal });
      return sortedDocuments(await drainQuery(iterator, afterFirstPage), "");
    },
  },
  queryCrossPartition: {
    prepare: () => [],
    touched: () => [],
    async run({ reads, afterFirstPage, abortSignal }) {
      return sortedDocuments(await drainQuery(reads.items.query("SELECT * FROM c", { maxItemCount: 2, abortSignal }), afterFirstPage), "");
    },
  },
  queryFanOut: {
    prepare: () => [],
    touched: () => [],
    async run({ reads, afterFirstPage, abortSignal }) {
      return sortedDocuments(await drainQuery(reads.items.query("SELECT * FROM c", { forceQueryPlan: true, maxItemCount: 2, abortSignal }), afterFirstPage), "");
    },
  },
  readAll: {
    prepare: () => [],
    touched: () => [],
    async run({ reads, afterFirstPage, abortSignal }) {
      return sortedDocuments(await drainQuery(reads.items.readAll({ maxItemCount: 2, abortSignal }), afterFirstPage), "");
    },
  },
  changeFeed: {
    prepare: () => [],
    touched: () => [],
    async run({ reads, afterFirstPage }) {
      const iterator = reads.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
      const all: unknown[] = [];
      for (let page = 1; ; page++) {
        const response = await iterator.readNext();
        if (response.statusCode === 304) break;
        // The change feed iterator hands an error page (a 410, say) back rather than throwing it: an error all the same.
        if (response.statusCode >= 400) throw Object.assign(new Error(`change feed page ${page}: ${response.statusCode}`), { code: response.statusCode });
        all.push(...response.result);
        if (page === 1) afterFirstPage();
        if (page > 50) throw new Error("more than 50 change feed pages: the feed does not end");
      }
      return sortedDocuments(all, "");
    },
  },
  create: {
    prepare: () => [],
    touched: (tag, rep) => [writeId(tag, rep)],
    async run({ writes, tag, rep, abortSignal }) {
      const response = await writes.items.create({ id: writeId(tag, rep), pk: writePartition, v: 0 }, { abortSignal });
      return { status: response.statusCode, document: userFields(response.resource, tag) };
    },
  },
  upsert: {
    prepare: (tag, rep) => [writeId(tag, rep)],
    touched: (tag, rep) => [writeId(tag, rep)],
    async run({ writes, tag, rep, abortSignal }) {
      const response = await writes.items.upsert({ id: writeId(tag, rep), pk: writePartition, v: 1 }, { abortSignal });
      return { status: response.statusCode, document: userFields(response.resource, tag) };
    },
  },
  replace: {
    prepare: (tag, rep) => [writeId(tag, rep)],
    touched: (tag, rep) => [writeId(tag, rep)],
    async run({ writes, tag, rep, abortSignal }) {
      const response = await writes.item(writeId(tag, rep), writePartition).replace({ id: writeId(tag, rep), pk: writePartition, v: 1 }, { abortSignal });
      return { status: response.statusCode, document: userFields(response.resource, tag) };
    },
  },
  patch: {
    prepare: (tag, rep) => [writeId(tag, rep)],
    touched: (tag, rep) => [writeId(tag, rep)],
    async run({ writes, tag, rep, abortSignal }) {
      const response = await writes.item(writeId(tag, rep), writePartition).patch([{ op: "set", path: "/v", value: 1 }], { abortSignal });
      return { status: response.statusCode, document: userFields(response.resource, tag) };
    },
  },
  delete: {
    prepare: (tag, rep) => [writeId(tag, rep)],
    touched: (tag, rep) => [writeId(tag, rep)],
    async run({ writes, tag, rep, abortSignal }) {
      const response = await writes.item(writeId(tag, rep), writePartition).delete({ abortSignal });
      return { status: response.statusCode };
    },
  },
  batch: {
    prepare: (tag, rep) => [writeId(tag, rep, "-a")],
    touched: (tag, rep) => [writeId(tag, rep, "-a"), writeId(tag, rep, "-b")],
    async run({ writes, tag, rep, abortSignal }) {
      const partitionKey = writePartition;
      const batch: OperationInput[] = [
        { operationType: BulkOperationType.Create, partitionKey, resourceBody: { id: writeId(tag, rep, "-b"), pk: writePartition, v: 0 } },
        { operationType: BulkOperationType.Replace, partitionKey, id: writeId(tag, rep, "-a"), resourceBody: { id: writeId(tag, rep, "-a"), pk: writePartition, v: 1 } },
        { operationType: BulkOperationType.Read, partitionKey, id: writeId(tag, rep, "-a") },
      ];
      const response = await writes.items.batch(batch, writePartition, { abortSignal });
      return { code: response.code, results: response.result?.map((result) => result.statusCode) };
    },
  },
  bulk: {
    prepare: () => [],
    touched: (tag, rep) => [0, 1, 2].map((i) => writeId(tag, rep, `-${i}`)),
    async run({ writes, tag, rep, abortSignal }) {
      const bulk: OperationInput[] = [0, 1, 2].map((i) => ({
        operationType: BulkOperationType.Create,
        partitionKey: writePartition,
        resourceBody: { id: writeId(tag, rep, `-${i}`), pk: writePartition, v: i },
      }));
      const results = await writes.items.executeBulkOperations(bulk, { abortSignal });
      return results.map((result) => result.response?.statusCode ?? `error ${errorClassOf(result.error)}`);
    },
  },
};

/** How many times a run repeats its operation (the median is over these): paged operations are long enough once. */
export function repetitionsOf(testCase: DifferentialCase): number {
  if (testCase.busy) return 1;
  return pagedOperations.has(testCase.operation) ? 1 : 3;
}

/** Which client a run uses: `baseline` is plain without the fault, the outcome the operation has when nothing fails. */
export type RunMode = "baseline" | "plain" | "hedged";

/** What one run saw. */
export interface RunResult {
  readonly mode: RunMode;
  /** One outcome per repetition (a busy run: per operation). */
  readonly outcomes: Outcome[];
  /** Milliseconds per repetition (a busy run: per operation). */
  readonly latencies: number[];
  /** The final state in the service of every document the operation touched (`null`: absent). */
  readonly documents: unknown[];
  /** Every request the run's client sent after its warm-up, at any region. */
  readonly requests: number;
  /** The requests of the operation's own kinds. */
  readonly operationRequests: number;
  /** Write requests that reached the backend. */
  readonly writesReachingService: number;
  /** Requests per region, for the failure message. */
  readonly byRegion: Record<string, number>;
  /** What the service saw, request by request ("+ms region kind status"), for the failure message. */
  readonly trace: string[];
}

let runCounter = 0;

/** The requests a client sent, found by its user-agent tag, in every region. */
export function requestsTagged(emulator: Emulator, tag: string, since = 0): RecordedRequest[] {
  const found: RecordedRequest[] = [];
  for (const region of emulator.regions) {
    for (const request of region.requests) if (request.at >= since && request.headers["user-agent"]?.includes(tag) === true) found.push(request);
  }
  return found;
}

/** Resolves once every request a client sent has ended (answered, reset or cut), or after `withinMs`. */
export async function settledTagged(emulator: Emulator, tag: string, since = 0, withinMs = 15_000): Promise<RecordedRequest[]> {
  const start = performance.now();
  for (;;) {
    const requests = requestsTagged(emulator, tag, since);
    if (requests.every((request) => request.endedAt !== undefined) || performance.now() - start > withinMs) return requests;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Waits for what a client's warm-up left running: a warm-up read hedged on a
 * loaded machine leaves its loser draining, and a request of that loser can
 * reach the emulator after the run's count has started, where it would be
 * counted as the operation's.
 */
async function warmUpSettled(options: CosmosClientOptions, emulator: Emulator, tag: string, withinMs = 15_000): Promise<void> {
  const metrics = (options.httpClient as Partial<HedgingHttpClient> | undefined)?.metrics;
  const start = performance.now();
  while (metrics !== undefined && metrics().losers.drainsInFlight > 0 && performance.now() - start < withinMs) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await settledTagged(emulator, tag, 0, withinMs);
}

/** A tag unique to one client, to put in its `userAgentSuffix` and to scope rules by. */
export function newTag(label: string): string {
  return `dt${++runCounter}-${label}~`;
}

/** The options of a client of a case: plain, or through `withHedging`. */
export function clientOptionsOf(
  emulator: Emulator,
  tag: string,
  settings: { requestTimeout: number; circuitBreaker: boolean; hedging: HedgingOptions | false; extra?: Omit<CosmosClientOptions, "endpoint" | "key" | "connectionPolicy"> },
): CosmosClientOptions {
  const base: CosmosClientOptions = {
    ...settings.extra,
    endpoint: emulator.endpoint,
    key: emulator.key,
    userAgentSuffix: tag,
    connectionPolicy: {
      enableBackgroundEndpointRefreshing: false,
      preferredLocations: [...regionNames],
      requestTimeout: settings.requestTimeout,
      ...(settings.circuitBreaker ? { enablePartitionLevelCircuitBreaker: true } : {}),
    },
  };
  return settings.hedging === false ? base : withHedging(base, settings.hedging);
}

/** A rule of a run: its own copy, met only by its client's requests. */
export function scopedRule(rule: FaultRule, tag: string, kinds: OperationKind[]): FaultRule {
  return { ...rule, operations: kinds, ifHeaderValue: { name: "user-agent", includes: tag } };
}

/**
 * How long one operation may take before it is aborted, and failed as
 * `"deadline"`: above any plain run of the matrix (four 3 s pages), so that
 * only a run that would not end (a hedged one that keeps going back to a hung
 * region) meets it, and fails in seconds rather than in the SDK's minutes.
 */
export const operationDeadlineMs = 20_000;

/** Runs an operation to its outcome: aborted at the deadline, and given up a little later if an SDK call takes no signal. */
async function settle(run: (abortSignal: AbortSignal) => Promise<unknown>, deadlineMs: number): Promise<Outcome> {
  const controller = new AbortController();
  let giveUp: NodeJS.Timeout | undefined;
  const abort = setTimeout(() => controller.abort(), deadlineMs);
  const deadline = new Promise<never>((_, reject) => {
    giveUp = setTimeout(() => reject(Object.assign(new Error(`no outcome within ${deadlineMs} ms`), { name: "DeadlineError" })), deadlineMs + 1_000);
  });
  try {
    return { ok: true, value: await Promise.race([run(controller.signal), deadline]) };
  } catch (error) {
    return { ok: false, errorClass: controller.signal.aborted ? "deadline" : errorClassOf(error), detail: describeError(error) };
  } finally {
    clearTimeout(abort);
    clearTimeout(giveUp);
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** What a test may change of a case's runs. */
export interface RunOverrides {
  /** The hedged client's options instead of the account kind's. */
  readonly hedging?: HedgingOptions;
  /** Instead of {@link operationDeadlineMs}. */
  readonly deadlineMs?: number;
  /** The rule to install instead of the case's fault's (still scoped to the run and the operation's kinds). */
  readonly rule?: FaultRule;
}

/** Runs a case's operation once in one mode: a fresh client, warmed up, then the fault, then the operation. */
export async function runMode(env: AccountEnv, testCase: DifferentialCase, mode: RunMode, overrides: RunOverrides = {}): Promise<RunResult> {
  const deadlineMs = overrides.deadlineMs ?? operationDeadlineMs;
  const { emulator } = env;
  const tag = newTag(mode);
  const spec = operations[testCase.operation];
  const reps = repetitionsOf(testCase);
  const options = clientOptionsOf(emulator, tag, {
    requestTimeout: requestTimeoutOf(testCase.fault),
    circuitBreaker: testCase.circuitBreaker,
    hedging: mode === "hedged" ? (overrides.hedging ?? hedgingOptionsOf(testCase)) : false,
  });
  const client = new CosmosClient(options);
  const handles: FaultHandle[] = [];
  try {
    const database = client.database(databaseId);
    const reads = database.container(readsContainerId);
    const writes = database.container(writesContainerId);
    // Warm caches (account, collections, partition key ranges) before the fault, as a running application has them.
    await reads.item(seededItems[0]!.id, seededItems[0]!.pk).read();
    await writes.items.query("SELECT * FROM c WHERE c.id = 'none'", { partitionKey: writePartition }).fetchAll();
    await warmUpSettled(options, emulator, tag);
    const count = testCase.busy ? busyOperations : reps;
    for (let rep = 0; rep < count; rep++) {
      for (const id of spec.prepare(tag, rep)) await env.setup.items.create({ id, pk: writePartition, v: 0 });
    }
    const install = (): void => {
      if (mode === "baseline") return;
      const rule = overrides.rule ?? faultRuleOf(testCase.fault);
      handles.push(emulator.region(preferredRegion).addFault(scopedRule(rule, tag, operationKindsOf(testCase.operation))));
    };
    const since = performance.now();
    if (!testCase.betweenPages) install();
    const outcomes: Outcome[] = [];
    const latencies: number[] = [];
    if (testCase.busy) {
      // Each operation's own latency: the median of a burst, not its slowest member.
      const all = await Promise.all(
        Array.from({ length: count }, async (_, rep) => {
          const start = performance.now();
          const outcome = await settle((abortSignal) => spec.run({ reads, writes, tag, rep, abortSignal, afterFirstPage: () => undefined }), deadlineMs);
          return { outcome, ms: performance.now() - start };
        }),
      );
      latencies.push(...all.map((entry) => entry.ms));
      outcomes.push(...all.map((entry) => entry.outcome));
    } else {
      for (let rep = 0; rep < reps; rep++) {
        let installed = false;
        const start = performance.now();
        outcomes.push(
          await settle((abortSignal) =>
            spec.run({
              reads,
              writes,
              tag,
              rep,
              abortSignal,
              afterFirstPage: () => {
                if (testCase.betweenPages && !installed) install();
                installed = true;
              },
            }),
            deadlineMs,
          ),
        );
        latencies.push(performance.now() - start);
      }
    }
    const requests = await settledTagged(emulator, tag, since);
    const kinds = operationKindsOf(testCase.operation);
    const byRegion: Record<string, number> = {};
    for (const request of requests) byRegion[`${request.region} ${request.kind}`] = (byRegion[`${request.region} ${request.kind}`] ?? 0) + 1;
    const documents: unknown[] = [];
    for (let rep = 0; rep < count; rep++) {
      for (const id of spec.touched(tag, rep)) {
        try {
          const { resource } = await env.setup.item(id, writePartition).read();
          documents.push(resource === undefined ? null : userFields(resource, tag));
        } catch (error) {
          documents.push(`read back failed: ${describeError(error)}`);
        }
      }
    }
    return {
      mode,
      outcomes: outcomes.map((outcome) => (outcome.ok ? { ok: true, value: JSON.parse(JSON.stringify(outcome.value ?? null).split(tag).join("RUN")) } : outcome)),
      latencies,
      documents,
      requests: requests.length,
      operationRequests: requests.filter((request) => kinds.includes(request.kind)).length,
      writesReachingService: requests.filter((request) => documentWriteKinds.has(request.kind) && request.forwarded).length,
      byRegion,
      trace: requests
        .sort((a, b) => a.at - b.at)
        .map(
          (request) =>
            `+${Math.round(request.at - since)}ms ${request.region} ${request.kind} ${request.status ?? (request.cutByClient ? "cut" : "reset")}` +
            `${request.forwarded && documentWriteKinds.has(request.kind) ? " forwarded" : ""}${request.headers["x-ms-continuation"] !== undefined || request.headers["if-none-match"] !== undefined ? " (continuation)" : ""}`,
        ),
    };
  } finally {
    for (const handle of handles) handle.remove();
    client.dispose();
  }
}

/** The three runs of a case. */
export interface CaseResult {
  readonly testCase: DifferentialCase;
  readonly baseline: RunResult;
  readonly plain: RunResult;
  readonly hedged: RunResult;
}

/** Runs a case: the fault-free baseline, then plain, then hedged, each from a fresh rule. */
export async function runCase(env: AccountEnv, testCase: DifferentialCase, overrides: RunOverrides = {}): Promise<CaseResult> {
  const baseline = await runMode(env, testCase, "baseline", overrides);
  const plain = await runMode(env, testCase, "plain", overrides);
  const hedged = await runMode(env, testCase, "hedged", overrides);
  return { testCase, baseline, plain, hedged };
}

/** Whether the hedged client may hedge this operation at all: a read, or a write with multi-write hedging on. */
function hedgeable(testCase: DifferentialCase): boolean {
  return !operationKindsOf(testCase.operation).some((kind) => documentWriteKinds.has(kind)) || testCase.account === "multiWriteHedged";
}

/** How hedged compared with plain: `same`, or `better` (plain failed, hedged got the fault-free answer), with the checks that failed. */
export interface Verdict {
  readonly relation: "same" | "better" | "worse";
  readonly problems: string[];
  readonly plainMedianMs: number;
  readonly hedgedMedianMs: number;
}

/** A request bound of the hedged run against plain's: 2x for a quiet client, `1 + maxExtraLoad` for a busy one. */
export function requestBound(testCase: DifferentialCase, plainRequests: number): number {
  return testCase.busy ? Math.ceil((1 + busyBudget.maxExtraLoad) * plainRequests) : 2 * plainRequests;
}

const show = (value: unknown): string => JSON.stringify(value);

/** A per-operation result of bulk that failed (`"error 4xx"`) or a status of 400 and above. */
function failedEntry(entry: unknown): boolean {
  return (typeof entry === "string" && entry.startsWith("error")) || (typeof entry === "number" && entry >= 400);
}

/**
 * Whether hedged did better than plain on one outcome: plain failed where
 * hedged got what the fault-free baseline got. For bulk, entry by entry: each
 * operation the same as plain's, or failed in plain and the baseline's in hedged.
 */
function better(hedged: Outcome, plain: Outcome, baseline: Outcome | undefined): boolean {
  if (!hedged.ok || baseline === undefined || !baseline.ok) return false;
  if (!plain.ok) return show(hedged.value) === show(baseline.value);
  const [h, p, b] = [hedged.value, plain.value, baseline.value];
  if (!Array.isArray(h) || !Array.isArray(p) || !Array.isArray(b) || h.length !== p.length || h.length !== b.length) return false;
  return h.every((entry, i) => show(entry) === show(p[i]) || (failedEntry(p[i]) && show(entry) === show(b[i])));
}

/** Whether a problem is only about latency, which a loaded machine can fake and a second run settles. */
export function latencyOnly(verdict: Verdict): boolean {
  return verdict.problems.length > 0 && verdict.problems.every((problem) => problem.startsWith("median latency"));
}

/**
 * The documents a hedged run should leave: for each operation, the
 * baseline's where hedged did better than plain, plain's otherwise. Each
 * operation of a case touches as many documents as the next, so the lists
 * split evenly; where they do not, the whole run's reference decides.
 */
function documentsExpected(count: number, plain: RunResult, baseline: RunResult, betterAt: ReadonlySet<number>): { mode: string; documents: unknown[] } {
  if (betterAt.size === 0) return plain;
  const operations = plain.outcomes.length;
  if (operations === 0 || count % operations !== 0 || plain.documents.length !== count || baseline.documents.length !== count) return baseline;
  if (betterAt.size === operations) return baseline;
  const each = count / operations;
  const documents = plain.documents.map((document, at) => (betterAt.has(Math.floor(at / each)) ? baseline.documents[at] : document));
  return { mode: `baseline where hedged did better (operations ${[...betterAt].map((i) => i + 1).join(", ")}), plain elsewhere`, documents };
}

/**
 * Judges a case: the same outcome (or better), the same documents, no more
 * writes, requests within bounds, and (for like outcomes) no slower beyond
 * the noise. A better outcome may take longer than plain's quick failure.
 */
export function judge(result: CaseResult): Verdict {
  const { testCase, baseline, plain, hedged } = result;
  const problems: string[] = [];
  let relation = "same" as Verdict["relation"];
  /** The operations hedged did better on than plain, whose documents are the baseline's. */
  const betterAt = new Set<number>();
  const baselineOk = baseline.outcomes.every((outcome) => outcome.ok && !(Array.isArray(outcome.value) && outcome.value.some(failedEntry)));
  if (!baselineOk) problems.push(`harness: the fault-free baseline failed: ${show(baseline.outcomes)}`);
  hedged.outcomes.forEach((outcome, i) => {
    const reference = plain.outcomes[i]!;
    const same = outcome.ok === reference.ok && (outcome.ok ? show(outcome.value) === show((reference as { value: unknown }).value) : outcome.errorClass === (reference as { errorClass: string }).errorClass);
    if (same) return;
    if (hedgeable(testCase) && better(outcome, reference, baseline.outcomes[i])) {
      if (relation === "same") relation = "better";
      betterAt.add(i);
      return;
    }
    relation = "worse";
    problems.push(`outcome ${i + 1}: hedged ${show(outcome)}, plain ${show(reference)}`);
  });
  // Operation by operation: one that hedged did better on left the baseline's documents, any other plain's (an SDK
  // breaker's deferral, say, leaves the first of a case's operations hedged and the next ones as plain's).
  const expected = documentsExpected(hedged.documents.length, plain, baseline, betterAt);
  if (show(hedged.documents) !== show(expected.documents)) {
    problems.push(`documents in the service: hedged ${show(hedged.documents)}, ${expected.mode} ${show(expected.documents)}`);
  }
  const writeBound = relation === "better" ? Math.max(plain.writesReachingService, baseline.writesReachingService) : plain.writesReachingService;
  if (hedged.writesReachingService > writeBound) {
    problems.push(`writes reaching the service: hedged ${hedged.writesReachingService}, plain ${plain.writesReachingService} (baseline ${baseline.writesReachingService})`);
  }
  const bound = requestBound(testCase, Math.max(plain.requests, baseline.requests));
  if (hedged.requests > bound) {
    problems.push(`requests: hedged ${hedged.requests} > ${bound} (plain ${plain.requests}); hedged ${show(hedged.byRegion)}, plain ${show(plain.byRegion)}`);
  }
  const plainMedianMs = median(plain.latencies);
  const hedgedMedianMs = median(hedged.latencies);
  if (relation === "same" && hedgedMedianMs > plainMedianMs + latencyMarginMs) {
    problems.push(`median latency: hedged ${Math.round(hedgedMedianMs)} ms > plain ${Math.round(plainMedianMs)} ms + ${latencyMarginMs} ms`);
  }
  if (problems.length > 0) relation = "worse";
  return { relation, problems, plainMedianMs, hedgedMedianMs };
}

/** The failure message of a case: its problems, then what the service saw of each run. */
export function explain(result: CaseResult, verdict: Verdict): string {
  const lines = [`${caseName(result.testCase)}: hedged is worse than plain`, ...verdict.problems.map((problem) => `  - ${problem}`)];
  for (const run of [result.plain, result.hedged]) {
    lines.push(`  ${run.mode} (${run.latencies.map((ms) => `${Math.round(ms)} ms`).join(", ")}):`, ...run.trace.slice(0, 60).map((line) => `    ${line}`));
    if (run.trace.length > 60) lines.push(`    ... ${run.trace.length - 60} more`);
  }
  return lines.join("\n");
}

/** Runs tasks with at most `limit` at once; each result is its own promise, so that one test can wait for its case alone. */
export function pooled<T>(tasks: ReadonlyArray<() => Promise<T>>, limit: number): Promise<T>[] {
  let next = 0;
  const resolvers: Array<{ resolve: (value: T) => void; reject: (error: unknown) => void }> = [];
  const promises = tasks.map(
    (_, i) =>
      new Promise<T>((resolve, reject) => {
        resolvers[i] = { resolve, reject };
      }),
  );
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const index = next++;
      try {
        resolvers[index]!.resolve(await tasks[index]!());
      } catch (error) {
        resolvers[index]!.reject(error);
      }
    }
  };
  for (let i = 0; i < Math.min(limit, tasks.length); i++) void worker();
  // A case nobody awaits (a test filtered out by --grep) must not become an unhandled rejection.
  for (const promise of promises) promise.catch(() => undefined);
  return promises;
}
