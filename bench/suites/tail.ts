import type { CosmosClientOptions } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { getHedgeDiagnostics } from "../../src/hedging/diagnostics.js";
import { startEmulator } from "../../test/emulator/index.js";
import type { Emulator } from "../../test/emulator/index.js";
import { createTestClient, seedContainer } from "../../test/support/cosmos.js";
import type { LatencySummary } from "../support/stats.js";
import { ms, percent } from "../support/stats.js";
import { markdownTable } from "../support/table.js";
import { runWorkload } from "../support/workload.js";

/** A way of running the client: plain `@azure/cosmos`, or with some hedging settings. */
export interface Mode {
  name: string;
  hedging?: HedgingOptions;
}

/** The stragglers case of issue 3: 10 % of point reads in the preferred region take 1 s more; the next region is 30 ms away. */
export interface StragglerSettings {
  reads: number;
  concurrency: number;
  stragglerShare: number;
  stragglerDelayMs: number;
  nextRegionLatencyMs: number;
  seed: number;
}

export const defaultStragglerSettings: StragglerSettings = {
  reads: 1000,
  concurrency: 10,
  stragglerShare: 0.1,
  stragglerDelayMs: 1000,
  nextRegionLatencyMs: 30,
  seed: 7,
};

/** One mode's figures. */
export interface TailRow {
  mode: string;
  latency: LatencySummary;
  extraRequests: number;
  hedgesWon: number;
  errors: number;
}

const itemCount = 100;
const preferred = ["East US", "West US"];

async function startAccount(settings: StragglerSettings): Promise<Emulator> {
  return startEmulator({
    regions: [{ name: "East US" }, { name: "West US", latencyMs: settings.nextRegionLatencyMs }],
    seed: settings.seed,
    recordRequests: false,
  });
}

async function runMode(mode: Mode, settings: StragglerSettings): Promise<TailRow> {
  const emulator = await startAccount(settings);
  try {
    const seeder = createTestClient(emulator);
    const items = Array.from({ length: itemCount }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 10}` }));
    await seedContainer(seeder, { database: "bench", container: "items", items });
    seeder.dispose();
    const base: CosmosClientOptions = { endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { preferredLocations: preferred } };
    const client = createTestClient(emulator, mode.hedging === undefined ? base : withHedging(base, mode.hedging));
    try {
      const container = client.database("bench").container("items");
      for (let i = 0; i < 20; i++) await container.item(`item-${i}`, `pk-${i % 10}`).read();
      emulator.resetCounters();
      emulator.region("East US").addFault({
        operations: ["pointRead"],
        delayMs: settings.stragglerDelayMs,
        probability: settings.stragglerShare,
      });
      let hedgesWon = 0;
      const result = await runWorkload(settings.reads, settings.concurrency, async (index) => {
        const id = index % itemCount;
        const response = await container.item(`item-${id}`, `pk-${id % 10}`).read();
        if (getHedgeDiagnostics(response.headers)?.hedgeWon) hedgesWon += 1;
      });
      const sent = emulator.count("pointRead");
      return {
        mode: mode.name,
        latency: result.latencies.summary(),
        extraRequests: (sent - settings.reads) / settings.reads,
        hedgesWon,
        errors: result.errors,
      };
    } finally {
      client.dispose();
    }
  } finally {
    await emulator.close();
  }
}

/** Runs every mode on a fresh emulator with the same seed, one after the other, in one process. */
export async function runStragglerSuite(modes: readonly Mode[], settings = defaultStragglerSettings): Promise<TailRow[]> {
  const rows: TailRow[] = [];
  for (const mode of modes) rows.push(await runMode(mode, settings));
  return rows;
}

/** The suite's table. */
export function tailTable(rows: readonly TailRow[]): string {
  return markdownTable(
    ["mode", "reads", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms", "extra requests", "hedges won", "errors"],
    rows.map((row) => [
      row.mode,
      String(row.latency.count),
      ms(row.latency.p50),
      ms(row.latency.p95),
      ms(row.latency.p99),
      ms(row.latency.p999),
      ms(row.latency.max),
      percent(row.extraRequests),
      String(row.hedgesWon),
      String(row.errors),
    ]),
  );
}
