import { spawn } from "node:child_process";
import { createDefaultHttpClient, createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { createTracingClient } from "@azure/core-tracing";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
// The built package, as users run it.
import { crossRegionHedgingPolicy, excludedRegionsPolicy, metadataHedgingPolicy, RegionCache, withHedging } from "cosmos-hedging";
import { startRemoteEmulator } from "../support/remoteEmulator.js";
import { InMemoryAccountAgent, inMemoryRegions } from "../support/inMemoryAccount.js";
import { markdownTable } from "../support/table.js";

/** The settings of the overhead suite through the real `@azure/cosmos` client. */
export interface SdkOverheadSettings {
  /** Runs of every mode, each mode in a fresh process per run. */
  runs: number;
  /** Measured rounds per run; the run's figure is their median. */
  roundsPerRun: number;
  /** Point reads per round. */
  readsPerRound: number;
  /** Reads in flight at once. */
  concurrency: number;
}

/** The settings `npm run bench` and `npm run bench:sdk-overhead` use. */
export const defaultSdkOverheadSettings: SdkOverheadSettings = { runs: 6, roundsPerRun: 6, readsPerRound: 1000, concurrency: 8 };

/** Reads each run's client makes before it is measured (connections open, code warm). */
const warmUpReads = 2000;

/** The `q` quantile of sorted values, interpolated between neighbours. */
function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (at - below);
}

/** The median of `values`, interpolated between the middle two of an even count. */
export function median(values: readonly number[]): number {
  return quantile([...values].sort((a, b) => a - b), 0.5);
}

/** One mode's figures. */
export interface SdkOverheadRow {
  mode: string;
  /** The reads measured over all runs (warm-ups left out). */
  reads: number;
  /** The median over runs of the client's CPU per read (user and system). */
  cpuMicrosPerRead: number;
  /** The median over runs of this mode's CPU per read over plain's in the same run. */
  cpuRelative: number;
  /** The 25th and 75th percentiles of those per-run ratios. */
  cpuRelativeLow: number;
  cpuRelativeHigh: number;
  /** The median over runs of reads a second. */
  readsPerSecond: number;
  /** The median over runs of this mode's reads a second over plain's in the same run. */
  throughputRelative: number;
}

/** What one run of one mode measured, as its process reports it. */
export interface SdkOverheadRun {
  /** The median over the run's rounds of the client's CPU per read (user and system), in µs. */
  cpuMicrosPerRead: number;
  /** The median over the run's rounds of reads a second. */
  readsPerSecond: number;
}

const preferredLocations = ["East US", "West US", "North Europe"];

/** One way of making the client the suite measures. */
export interface SdkOverheadMode {
  /** The mode's row label. */
  readonly name: string;
  /** The client's options, from the options every mode starts from. */
  readonly options: (base: CosmosClientOptions) => CosmosClientOptions;
}

const referenceTracing = createTracingClient({ namespace: "Microsoft.DocumentDB", packageName: "bench-reference", packageVersion: "0" });

/**
 * A reference, not a product: the least any race must do per read (an abort
 * controller listening to the caller's signal, a timer for the hedge, a copy
 * of the request) and, with `spanAndHeader`, the two things every race of
 * ours also owes its user (a span, no-op here, and a JSON diagnostics
 * header). It shows how much of the hedging client's cost is the race itself.
 */
function referenceRace(spanAndHeader: boolean): PipelinePolicy {
  const copy = (request: PipelineRequest, abortSignal: AbortSignal): PipelineRequest => {
    const arm = createPipelineRequest({
      url: request.url,
      method: request.method,
      headers: createHttpHeaders(request.headers.toJSON({ preserveCase: true })),
      abortSignal,
    });
    if (request.agent !== undefined) arm.agent = request.agent;
    if (request.allowInsecureConnection !== undefined) arm.allowInsecureConnection = request.allowInsecureConnection;
    if (request.body !== undefined) arm.body = request.body;
    return arm;
  };
  return {
    name: "referenceRace",
    async sendRequest(request, next) {
      const controller = new AbortController();
      const onAbort = (): void => controller.abort();
      request.abortSignal?.addEventListener("abort", onAbort);
      const timer = setTimeout(() => undefined, 500);
      const span = spanAndHeader ? referenceTracing.startSpan("hedge pointRead", { tracingOptions: {} }, { spanKind: "internal" }).span : undefined;
      const startedAt = performance.now();
      try {
        const response = await next(copy(request, controller.signal));
        response.request = request;
        if (spanAndHeader) {
          const arm = { region: "East US", reason: "primary", startOffsetMs: 0, outcome: "returned", durationMs: Math.round(performance.now() - startedAt), status: response.status, activityId: response.headers.get("x-ms-activity-id"), requestCharge: 1 };
          response.headers.set("x-cosmos-hedging-diagnostics", JSON.stringify({ policy: "crossRegion", operation: "pointRead", thresholdMs: 500, thresholdStepMs: 100, thresholdSource: "options", primaryRegion: "East US", arms: [arm], hedgeFired: false, totalRequestCharge: 1, hedgeWon: false, terminalState: "primaryWon", winningRegion: "East US", winningActivityId: arm.activityId }));
        }
        return response;
      } finally {
        clearTimeout(timer);
        request.abortSignal?.removeEventListener("abort", onAbort);
        span?.end();
      }
    },
  };
}

/**
 * The floor of any hedging, a reference, not a product: the caller's own
 * request sent as it is, with one timer for a hedge that never fires,
 * cleared when the read ends. What a lazy race costs above it is its own.
 */
function referenceFloor(): PipelinePolicy {
  return {
    name: "referenceFloor",
    sendRequest(request, next) {
      const timer = setTimeout(() => undefined, 500);
      return next(request).finally(() => clearTimeout(timer));
    },
  };
}

function byHand(base: CosmosClientOptions, policies: readonly PipelinePolicy[]): CosmosClientOptions {
  const pipeline = createEmptyPipeline();
  for (const policy of policies) pipeline.addPolicy(policy);
  const transport = createDefaultHttpClient();
  return { ...base, httpClient: { sendRequest: (request) => pipeline.sendRequest(transport, request) } };
}

/** The modes, plain `@azure/cosmos` first: every ratio is against it. */
export const sdkOverheadModes: readonly SdkOverheadMode[] = [
  { name: "plain @azure/cosmos", options: (base) => base },
  { name: "control: plain @azure/cosmos again", options: (base) => ({ ...base }) },
  {
    name: "withHedging, hedging on (500 ms, never reached)",
    options: (base) => withHedging(base, { crossRegion: { threshold: 500 }, metadata: true }),
  },
  { name: "withHedging, hedging off", options: (base) => withHedging(base, { crossRegion: false, metadata: false }) },
  {
    name: "policies added by hand (core-client path)",
    options: (base) => {
      const regions = new RegionCache({ preferredRegions: preferredLocations });
      return byHand(base, [
        excludedRegionsPolicy({ regions }),
        metadataHedgingPolicy({ regions, enabled: true }),
        crossRegionHedgingPolicy({ regions, threshold: 500 }),
      ]);
    },
  },
  { name: "reference: the floor (the caller's request plus one timer)", options: (base) => byHand(base, [referenceFloor()]) },
  { name: "reference: a bare race (controller, timer, copy)", options: (base) => byHand(base, [referenceRace(false)]) },
  { name: "reference: a bare race + no-op span + JSON header", options: (base) => byHand(base, [referenceRace(true)]) },
];

/** Reads one item `reads` times, `concurrency` reads at a time. */
export async function readRound(container: Container, reads: number, concurrency: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < reads) {
      next++;
      const { statusCode } = await container.item("item", "pk").read();
      if (statusCode !== 200) throw new Error(`a read answered ${statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * One run of one mode, in the process that calls it (the worker's): a
 * client, a warm-up, then the median CPU per read and throughput over the
 * measured rounds.
 */
export async function measureSdkOverheadRun(mode: SdkOverheadMode, base: CosmosClientOptions, settings: SdkOverheadSettings): Promise<SdkOverheadRun> {
  const client = new CosmosClient(mode.options(base));
  try {
    const container = client.database("bench").container("items");
    await readRound(container, warmUpReads, settings.concurrency);
    const cpu: number[] = [];
    const rate: number[] = [];
    for (let round = 0; round < settings.roundsPerRun; round++) {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      await readRound(container, settings.readsPerRound, settings.concurrency);
      rate.push(settings.readsPerRound / ((performance.now() - started) / 1000));
      const used = process.cpuUsage(cpuBefore);
      cpu.push((used.user + used.system) / settings.readsPerRound);
    }
    return { cpuMicrosPerRead: median(cpu), readsPerSecond: median(rate) };
  } finally {
    client.dispose();
  }
}

/**
 * Where the reads go: the emulator in a child process over loopback TCP, or
 * the account of bench/support/inMemoryAccount.ts (no socket, no server).
 */
export type SdkOverheadAccount = { readonly kind: "emulator"; readonly endpoint: string; readonly key: string } | { readonly kind: "inMemory" };

/** What a worker process is asked to run. */
export interface SdkOverheadJob {
  readonly modeIndex: number;
  readonly account: SdkOverheadAccount;
  readonly settings: SdkOverheadSettings;
}

/** The in-memory account's key: the account checks none, but the SDK signs every request with one. */
const inMemoryKey = Buffer.alloc(64, 7).toString("base64");

/** The options every mode's client starts from, for that account. */
export function sdkOverheadBaseOptions(account: SdkOverheadAccount): CosmosClientOptions {
  const connectionPolicy = { enableBackgroundEndpointRefreshing: false, preferredLocations };
  if (account.kind === "emulator") return { endpoint: account.endpoint, key: account.key, connectionPolicy };
  return { endpoint: inMemoryRegions[0].endpoint, key: inMemoryKey, agent: new InMemoryAccountAgent(), connectionPolicy };
}

/** Runs one mode in a fresh Node.js process (bench/support/sdkOverheadWorker.ts) and returns what it measured. */
function runInWorker(job: SdkOverheadJob): Promise<SdkOverheadRun> {
  const { modeIndex } = job;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/support/sdkOverheadWorker.ts"], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, SDK_OVERHEAD_JOB: JSON.stringify(job) },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`the overhead worker of mode ${modeIndex} exited with ${code}`));
      else resolve(JSON.parse(output) as SdkOverheadRun);
    });
  });
}

/** Runs every mode `settings.runs` times against one account, each run in a process of its own, alternating between the modes. */
async function runModes(account: SdkOverheadAccount, settings: SdkOverheadSettings): Promise<SdkOverheadRow[]> {
  const runs = sdkOverheadModes.map(() => [] as SdkOverheadRun[]);
  for (let run = 0; run < settings.runs; run++) {
    // Each run starts with the next mode (a rotation), so that no mode always holds the same place in a run.
    for (let offset = 0; offset < sdkOverheadModes.length; offset++) {
      const modeIndex = (run + offset) % sdkOverheadModes.length;
      runs[modeIndex]!.push(await runInWorker({ modeIndex, account, settings }));
    }
  }
  const plain = runs[0]!;
  return sdkOverheadModes.map((mode, index) => {
    const own = runs[index]!;
    const cpuRatios = own.map((result, run) => result.cpuMicrosPerRead / plain[run]!.cpuMicrosPerRead).sort((a, b) => a - b);
    return {
      mode: mode.name,
      reads: settings.runs * settings.roundsPerRun * settings.readsPerRound,
      cpuMicrosPerRead: median(own.map((result) => result.cpuMicrosPerRead)),
      readsPerSecond: median(own.map((result) => result.readsPerSecond)),
      cpuRelative: quantile(cpuRatios, 0.5),
      cpuRelativeLow: quantile(cpuRatios, 0.25),
      cpuRelativeHigh: quantile(cpuRatios, 0.75),
      throughputRelative: median(own.map((result, run) => result.readsPerSecond / plain[run]!.readsPerSecond)),
    };
  });
}

/** The suite's two tables: over the emulator (what a user pays) and over the in-memory account (what the client's code costs). */
export interface SdkOverheadResults {
  readonly emulator: SdkOverheadRow[];
  readonly inMemory: SdkOverheadRow[];
}

/**
 * Client CPU per point read through the real `@azure/cosmos` client,
 * keep-alive connections, no hedge ever fired: what the pass-through path
 * costs a user. Over the emulator in a child process, only the client's CPU
 * is counted, but loopback TCP and a server sharing the two cores make runs
 * differ by ±10 %; over the in-memory account (the SDK and Node's HTTP
 * client in full, no socket or server) runs differ by a few per cent, and
 * what the client's own code costs stands out. Each run of each mode has a
 * process of its own, as an application has one client: modes sharing a
 * process and its heap charge each other for their garbage and make the
 * SDK's own code see every mode's shapes. Runs alternate between the modes,
 * and each mode is compared with plain's run next to it.
 */
export async function runSdkOverheadSuite(settings = defaultSdkOverheadSettings): Promise<SdkOverheadResults> {
  const inMemory = await runModes({ kind: "inMemory" }, settings);
  const emulator = await startRemoteEmulator();
  try {
    const account: SdkOverheadAccount = { kind: "emulator", endpoint: emulator.endpoint, key: emulator.key };
    const seeder = new CosmosClient(sdkOverheadBaseOptions(account));
    const { database } = await seeder.databases.createIfNotExists({ id: "bench" });
    const { container: seeded } = await database.containers.createIfNotExists({ id: "items", partitionKey: { paths: ["/pk"] } });
    await seeded.items.upsert({ id: "item", pk: "pk", value: 1 });
    seeder.dispose();
    return { emulator: await runModes(account, settings), inMemory };
  } finally {
    await emulator.close();
  }
}

function table(rows: readonly SdkOverheadRow[]): string {
  return markdownTable(
    ["mode", "reads", "client CPU per read", "CPU vs plain (median, p25-p75)", "reads/s", "throughput vs plain (median)"],
    rows.map((row) => [
      row.mode,
      String(row.reads),
      `${row.cpuMicrosPerRead.toFixed(0)} µs`,
      `${row.cpuRelative.toFixed(3)} x (${row.cpuRelativeLow.toFixed(2)}-${row.cpuRelativeHigh.toFixed(2)})`,
      row.readsPerSecond.toFixed(0),
      `${row.throughputRelative.toFixed(3)} x`,
    ]),
  );
}

/** The suite's two tables, each with what it measured and how. */
export function sdkOverheadTables(results: SdkOverheadResults, settings = defaultSdkOverheadSettings): string {
  const method =
    `keep-alive, concurrency ${settings.concurrency}; each mode runs ${settings.runs} times, each time in a fresh process (one client, as an application has), ` +
    `alternating with the other modes; a run warms up on ${warmUpReads} reads and measures ${settings.roundsPerRun} rounds of ${settings.readsPerRound} reads (their median). ` +
    "Client CPU (user and system) from `process.cpuUsage()`; each mode's ratio to plain is taken per run (the median, and the 25th-75th percentiles, over runs). " +
    "Targets (issue 23): CPU at most 1.05 x plain with hedging on and 1.02 x with it off, throughput at least 0.95 x.";
  return (
    `Over the emulator in a child process (loopback TCP; what a user pays, only the client's CPU counted), ${method}\n\n${table(results.emulator)}\n\n` +
    "Over an account in memory (bench/support/inMemoryAccount.ts: the SDK and Node's HTTP client in full, connections that are in-memory streams answering at once, " +
    "account endpoints with `:443` as the service lists them; no socket, TLS or server shares the CPU, so runs differ by a few per cent and the client's own code stands out), " +
    `same method.\n\n${table(results.inMemory)}`
  );
}
