import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
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

export const defaultSdkOverheadSettings: SdkOverheadSettings = { readsPerRound: 2000, rounds: 6, concurrency: 8 };

/** One mode's figures. */
export interface SdkOverheadRow {
  mode: string;
  reads: number;
  cpuMicrosPerRead: number;
  cpuRelative: number;
  readsPerSecond: number;
  throughputRelative: number;
}

const preferredLocations = ["East US", "West US", "North Europe"];

interface Mode {
  readonly name: string;
  readonly options: (base: CosmosClientOptions) => CosmosClientOptions;
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
      const pipeline = createEmptyPipeline();
      pipeline.addPolicy(excludedRegionsPolicy({ regions }));
      pipeline.addPolicy(metadataHedgingPolicy({ regions, enabled: true }));
      pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 500 }));
      const transport = createDefaultHttpClient();
      return { ...base, httpClient: { sendRequest: (request) => pipeline.sendRequest(transport, request) } };
    },
  },
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

    const cpu = modes.map(() => 0);
    const wall = modes.map(() => 0);
    for (let round = 0; round < settings.rounds; round++) {
      // Each round starts with another mode, so that no mode always runs right after the same one.
      for (let offset = 0; offset < containers.length; offset++) {
        const index = (round + offset) % containers.length;
        const container = containers[index]!;
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        await readRound(container, settings.readsPerRound, settings.concurrency);
        wall[index]! += performance.now() - started;
        const used = process.cpuUsage(cpuBefore);
        cpu[index]! += used.user + used.system;
      }
    }
    const reads = settings.readsPerRound * settings.rounds;
    const rows = modes.map((mode, index) => ({
      mode: mode.name,
      reads,
      cpuMicrosPerRead: cpu[index]! / reads,
      readsPerSecond: reads / (wall[index]! / 1000),
    }));
    const plain = rows[0]!;
    return rows.map((row) => ({
      ...row,
      cpuRelative: row.cpuMicrosPerRead / plain.cpuMicrosPerRead,
      throughputRelative: row.readsPerSecond / plain.readsPerSecond,
    }));
  } finally {
    for (const client of clients) client.dispose();
    await emulator.close();
  }
}

export function sdkOverheadTable(rows: readonly SdkOverheadRow[], settings = defaultSdkOverheadSettings): string {
  return (
    `Point reads through the real \`@azure/cosmos\` client, the emulator in a child process, keep-alive, ` +
    `concurrency ${settings.concurrency}, ${settings.rounds} alternating rounds of ${settings.readsPerRound} reads per mode; ` +
    "client CPU from `process.cpuUsage()`. Target: CPU at most 1.05 x plain, throughput at least 0.97 x.\n\n" +
    markdownTable(
      ["mode", "reads", "client CPU per read", "CPU vs plain", "reads/s", "throughput vs plain"],
      rows.map((row) => [
        row.mode,
        String(row.reads),
        `${row.cpuMicrosPerRead.toFixed(0)} µs`,
        `${row.cpuRelative.toFixed(3)} x`,
        row.readsPerSecond.toFixed(0),
        `${row.throughputRelative.toFixed(3)} x`,
      ]),
    )
  );
}
