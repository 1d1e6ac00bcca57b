import { performance } from "node:perf_hooks";
import type { CosmosClientOptions } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { startEmulator } from "../../test/emulator/index.js";
import { createTestClient, seedContainer } from "../../test/support/cosmos.js";
import { LatencyRecorder, ms } from "../support/stats.js";
import type { LatencySummary } from "../support/stats.js";
import { markdownTable } from "../support/table.js";

/** Issue 4's cold-start case: fresh clients' first point read while the preferred region stalls the metadata reads. */
export interface ColdStartSettings {
  clients: number;
  /** Clients started at once, per mode. */
  batch: number;
  metadataDelayMs: number;
  nextRegionLatencyMs: number;
  threshold: number;
}

export const defaultColdStartSettings: ColdStartSettings = {
  clients: 50,
  batch: 10,
  metadataDelayMs: 3000,
  nextRegionLatencyMs: 30,
  threshold: 1500,
};

/** One mode's figures. */
export interface ColdStartRow {
  mode: string;
  latency: LatencySummary;
  hedgesFired: number;
  hedgesWon: number;
}

/**
 * Each fresh client's first read is a point read without a partition key,
 * which makes `@azure/cosmos` read the container (its partition-key
 * definition) first. (With a partition key, 4.10.1 reads no metadata for a
 * point read; an upsert, a read without one, `container.read()` and the
 * change feed do.) Both modes start their clients side by side in each batch,
 * so they meet the same stalls at the same moments.
 */
export async function runColdStartSuite(settings = defaultColdStartSettings): Promise<ColdStartRow[]> {
  const emulator = await startEmulator({
    regions: [{ name: "East US" }, { name: "West US", latencyMs: settings.nextRegionLatencyMs }],
    recordRequests: false,
  });
  try {
    const seeder = createTestClient(emulator);
    await seedContainer(seeder, { database: "bench", container: "cold", items: [{ id: "item", pk: "item" }], partitionKey: "/id" });
    seeder.dispose();
    emulator.region("East US").addFault({ operations: ["collectionRead", "partitionKeyRangeReadFeed"], delayMs: settings.metadataDelayMs });
    const base: CosmosClientOptions = {
      endpoint: emulator.endpoint,
      key: emulator.key,
      connectionPolicy: { preferredLocations: ["East US", "West US"], enableBackgroundEndpointRefreshing: false },
    };
    const plain = { name: "off (plain @azure/cosmos)", latencies: new LatencyRecorder(), fired: 0, won: 0 };
    const hedged = { name: `metadata hedging, ${settings.threshold} ms`, latencies: new LatencyRecorder(), fired: 0, won: 0 };
    const coldRead = async (mode: typeof plain, options: CosmosClientOptions): Promise<void> => {
      const client = createTestClient(emulator, options);
      const start = performance.now();
      try {
        await client.database("bench").container("cold").item("item").read();
        mode.latencies.record(performance.now() - start);
      } finally {
        client.dispose();
      }
    };
    for (let started = 0; started < settings.clients; started += settings.batch) {
      const count = Math.min(settings.batch, settings.clients - started);
      await Promise.all(
        Array.from({ length: count }, () => [
          coldRead(plain, base),
          coldRead(
            hedged,
            withHedging(base, {
              crossRegion: false,
              metadata: { threshold: settings.threshold },
              onDiagnostics: (record) => {
                if (record.policy !== "metadata") return;
                if (record.hedgeFired) hedged.fired += 1;
                if (record.hedgeWon) hedged.won += 1;
              },
            }),
          ),
        ]).flat(),
      );
    }
    return [plain, hedged].map((mode) => ({
      mode: mode.name,
      latency: mode.latencies.summary(),
      hedgesFired: mode.fired,
      hedgesWon: mode.won,
    }));
  } finally {
    await emulator.close();
  }
}

/** The suite's table. */
export function coldStartTable(rows: readonly ColdStartRow[]): string {
  return markdownTable(
    ["mode", "clients", "p50 ms", "p99 ms", "max ms", "metadata hedges fired", "hedges won"],
    rows.map((row) => [
      row.mode,
      String(row.latency.count),
      ms(row.latency.p50),
      ms(row.latency.p99),
      ms(row.latency.max),
      String(row.hedgesFired),
      String(row.hedgesWon),
    ]),
  );
}
