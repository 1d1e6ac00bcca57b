import { createDefaultHttpClient, createEmptyPipeline, createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { createTracingClient } from "@azure/core-tracing";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
// The built package, as users run it.
import { crossRegionHedgingPolicy, excludedRegionsPolicy, metadataHedgingPolicy, RegionCache, withHedging } from "cosmos-hedging";
import { startRemoteEmulator } from "../support/remoteEmulator.js";
import type { RemoteEmulator } from "../support/remoteEmulator.js";
import { markdownTable } from "../support/table.js";

/** The settings of the overhead suite through the real `@azure/cosmos` client. */
export interface SdkOverheadSettings {
  readsPerRound: number;
  rounds: number;
  concurrency: number;
}

export const defaultSdkOverheadSettings: SdkOverheadSettings = { readsPerRound: 1000, rounds: 16, concurrency: 8 };

/** The `q` quantile of sorted values, interpolated between neighbours. */
function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (at - below);
}

/** One mode's figures. */
export interface SdkOverheadRow {
  mode: string;
  reads: number;
  cpuMicrosPerRead: number;
  /** The median over rounds of this mode's CPU per read over plain's in the same round. */
  cpuRelative: number;
  /** The 25th and 75th percentiles of those per-round ratios. */
  cpuRelativeLow: number;
  cpuRelativeHigh: number;
  readsPerSecond: number;
  throughputRelative: number;
}

const preferredLocations = ["East US", "West US", "North Europe"];

interface Mode {
  readonly name: string;
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

function byHand(base: CosmosClientOptions, policies: readonly PipelinePolicy[]): CosmosClientOptions {
  const pipeline = createEmptyPipeline();
  for (const policy of policies) pipeline.addPolicy(policy);
  const transport = createDefaultHttpClient();
  return { ...base, httpClient: { sendRequest: (request) => pipeline.sendRequest(transport, request) } };
}

/** The modes, plain `@azure/cosmos` first: every ratio is against it. */
const modes: readonly Mode[] = [
  { name: "plain @azure/cosmos", options: (base) => base },
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
  { name: "reference: a bare race (controller, timer, copy)", options: (base) => byHand(base, [referenceRace(false)]) },
  { name: "reference: a bare race + no-op span + JSON header", options: (base) => byHand(base, [referenceRace(true)]) },
];

async function readRound(container: Container, reads: number, concurrency: number): Promise<void> {
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
 * Client CPU per point read through the real `@azure/cosmos` client, the
 * emulator in a child process (so only this process's CPU is counted),
 * keep-alive connections, no hedge ever fired: what the pass-through path
 * costs a user. Rounds alternate between the modes, so that a noisy machine
 * slows them alike.
 */
export async function runSdkOverheadSuite(settings = defaultSdkOverheadSettings): Promise<SdkOverheadRow[]> {
  const emulator: RemoteEmulator = await startRemoteEmulator();
  const clients: CosmosClient[] = [];
  try {
    const base: CosmosClientOptions = {
      endpoint: emulator.endpoint,
      key: emulator.key,
      connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations },
    };
    const seeder = new CosmosClient(base);
    const { database } = await seeder.databases.createIfNotExists({ id: "bench" });
    const { container: seeded } = await database.containers.createIfNotExists({ id: "items", partitionKey: { paths: ["/pk"] } });
    await seeded.items.upsert({ id: "item", pk: "pk", value: 1 });
    seeder.dispose();

    const containers = modes.map((mode) => {
      const client = new CosmosClient(mode.options(base));
      clients.push(client);
      return client.database("bench").container("items");
    });
    for (const container of containers) await readRound(container, 500, settings.concurrency);

    // Per round and mode: the machine's load drifts between rounds, so each mode is compared with plain in the same round.
    const cpu = modes.map(() => [] as number[]);
    const wall = modes.map(() => [] as number[]);
    for (let round = 0; round < settings.rounds; round++) {
      // Each round starts with another mode, so that no mode always runs right after the same one.
      for (let offset = 0; offset < containers.length; offset++) {
        const index = (round + offset) % containers.length;
        const container = containers[index]!;
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        await readRound(container, settings.readsPerRound, settings.concurrency);
        wall[index]!.push(performance.now() - started);
        const used = process.cpuUsage(cpuBefore);
        cpu[index]!.push(used.user + used.system);
      }
    }
    const reads = settings.readsPerRound * settings.rounds;
    const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0);
    const ratios = (of: readonly number[], to: readonly number[]): number[] => of.map((value, round) => value / to[round]!).sort((a, b) => a - b);
    return modes.map((mode, index) => {
      const cpuRatios = ratios(cpu[index]!, cpu[0]!);
      return {
        mode: mode.name,
        reads,
        cpuMicrosPerRead: sum(cpu[index]!) / reads,
        readsPerSecond: reads / (sum(wall[index]!) / 1000),
        cpuRelative: quantile(cpuRatios, 0.5),
        cpuRelativeLow: quantile(cpuRatios, 0.25),
        cpuRelativeHigh: quantile(cpuRatios, 0.75),
        throughputRelative: quantile(ratios(wall[0]!, wall[index]!), 0.5),
      };
    });
  } finally {
    for (const client of clients) client.dispose();
    await emulator.close();
  }
}

export function sdkOverheadTable(rows: readonly SdkOverheadRow[], settings = defaultSdkOverheadSettings): string {
  return (
    `Point reads through the real \`@azure/cosmos\` client, the emulator in a child process, keep-alive, ` +
    `concurrency ${settings.concurrency}, ${settings.rounds} alternating rounds of ${settings.readsPerRound} reads per mode; ` +
    "client CPU from `process.cpuUsage()`; each mode's ratio to plain is taken per round (the median, and the 25th-75th percentiles, over rounds), " +
    "so that load drifting between rounds does not land on one mode. Target: CPU at most 1.05 x plain, throughput at least 0.97 x.\n\n" +
    markdownTable(
      ["mode", "reads", "client CPU per read", "CPU vs plain (median, p25-p75)", "reads/s", "throughput vs plain (median)"],
      rows.map((row) => [
        row.mode,
        String(row.reads),
        `${row.cpuMicrosPerRead.toFixed(0)} µs`,
        `${row.cpuRelative.toFixed(3)} x (${row.cpuRelativeLow.toFixed(2)}-${row.cpuRelativeHigh.toFixed(2)})`,
        row.readsPerSecond.toFixed(0),
        `${row.throughputRelative.toFixed(3)} x`,
      ]),
    )
  );
}
