import { CosmosClient } from "@azure/cosmos";
import type { CosmosClientOptions } from "@azure/cosmos";
import { startEmulator } from "../../test/emulator/index.js";
import type { Emulator, EmulatorRegionSpec } from "../../test/emulator/index.js";
import { seedContainer } from "../../test/support/cosmos.js";
import { describeRead, disposeAll, modeClientOptions } from "../support/modes.js";
import type { ModeSpec } from "../support/modes.js";
import type { LatencySummary } from "../support/stats.js";
import { ms, percent } from "../support/stats.js";
import { markdownTable } from "../support/table.js";
import type { ModeTimeline, Phase } from "../support/timeline.js";
import { runTimeline } from "../support/timeline.js";
import { runWorkload } from "../support/workload.js";

const itemCount = 100;
const preferred = "East US";

/** A count-based case: the same reads for each mode, each on a fresh emulator with the same seed. */
export interface CountScenario {
  name: string;
  reads: number;
  concurrency: number;
  regions: EmulatorRegionSpec[];
  /** Degrades the account once the clients are warm. */
  degrade?: (emulator: Emulator) => void;
}

/** One mode's figures in a case. */
export interface TailRow {
  scenario: string;
  mode: string;
  latency: LatencySummary;
  /** Requests that reached the service beyond one per read. */
  extraRequests: number;
  /** Every request that reached the service, per read. */
  requestsPerRead: number;
  hedgesWon: number;
  errors: number;
}

/** Issue 3's stragglers: 10 % of point reads in the preferred region take 1 s more; the next region is 30 ms away. */
export const stragglers: CountScenario = {
  name: "stragglers: 10% of reads +1 s",
  reads: 1000,
  concurrency: 10,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
  degrade: (emulator) => {
    emulator.region(preferred).addFault({ operations: ["pointRead"], delayMs: 1000, probability: 0.1 });
  },
};

/** Healthy regions: what hedging costs when nothing is wrong. */
export const healthy: CountScenario = {
  name: "healthy",
  reads: 2000,
  concurrency: 10,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
};

/** Every region slow: hedging cannot help, and the budget must keep it from adding load. */
export const overload: CountScenario = {
  name: "overload: every region +100 ms",
  reads: 600,
  concurrency: 10,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
  degrade: (emulator) => {
    for (const region of emulator.regions) region.addFault({ operations: ["pointRead"], delayMs: { min: 100, max: 160 } });
  },
};

function itemKey(index: number): [string, string] {
  const id = index % itemCount;
  return [`item-${id}`, `pk-${id % 10}`];
}

async function seeded(regions: EmulatorRegionSpec[], seed: number): Promise<{ emulator: Emulator; base: CosmosClientOptions }> {
  const emulator = await startEmulator({ regions, seed, recordRequests: false });
  const seeder = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
  const items = Array.from({ length: itemCount }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 10}` }));
  await seedContainer(seeder, { database: "bench", container: "items", items });
  seeder.dispose();
  const base: CosmosClientOptions = {
    endpoint: emulator.endpoint,
    key: emulator.key,
    connectionPolicy: { preferredLocations: regions.map((region) => region.name), enableBackgroundEndpointRefreshing: false },
  };
  return { emulator, base };
}

async function runMode(scenario: CountScenario, mode: ModeSpec, seed: number): Promise<TailRow> {
  const { emulator, base } = await seeded(scenario.regions, seed);
  const client = new CosmosClient(modeClientOptions(mode, base, emulator));
  try {
    const container = client.database("bench").container("items");
    for (let i = 0; i < 50; i++) await container.item(...itemKey(i)).read();
    emulator.resetCounters();
    scenario.degrade?.(emulator);
    let hedgesWon = 0;
    const regionOf = (endpoint: string): string | undefined =>
      emulator.regions.find((region) => new URL(region.endpoint).host === new URL(endpoint).host)?.name;
    const result = await runWorkload(scenario.reads, scenario.concurrency, async (index) => {
      const detail = describeRead(await container.item(...itemKey(index)).read(), regionOf);
      if (detail.region !== undefined && detail.region !== preferred) hedgesWon += 1;
    });
    const sent = emulator.count("pointRead");
    return {
      scenario: scenario.name,
      mode: mode.name,
      latency: result.latencies.summary(),
      extraRequests: (sent - scenario.reads) / scenario.reads,
      requestsPerRead: sent / scenario.reads,
      hedgesWon,
      errors: result.errors,
    };
  } finally {
    client.dispose();
    await emulator.close();
  }
}

/** Runs every mode through the case, one after the other, in one process. */
export async function runCountScenario(scenario: CountScenario, modes: readonly ModeSpec[], seed = 7): Promise<TailRow[]> {
  const rows: TailRow[] = [];
  for (const mode of modes) rows.push(await runMode(scenario, mode, seed));
  return rows;
}

/** The table of count-based cases. */
export function tailTable(rows: readonly TailRow[]): string {
  return markdownTable(
    ["case", "mode", "reads", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms", "extra requests", "served elsewhere", "errors"],
    rows.map((row) => [
      row.scenario,
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

/** The brown-out case's settings: healthy, then every read in the preferred region slower, then healthy again. */
export interface BrownOutSettings {
  healthySeconds: number;
  brownOutSeconds: number;
  recoverySeconds: number;
  delayMs: number;
  concurrencyPerMode: number;
}

export const defaultBrownOut: BrownOutSettings = {
  healthySeconds: 5,
  brownOutSeconds: 20,
  recoverySeconds: 12,
  delayMs: 300,
  concurrencyPerMode: 4,
};

/** One mode's figures in the brown-out case. */
export interface BrownOutRow {
  mode: string;
  /** p50 of reads that started between 5 s after the brown-out began and its end. */
  brownOutP50: number;
  /** Seconds after the brown-out began until a one-second window's p50 came within 10 % of the oracle's. */
  secondsToOracleP50: number | undefined;
  /** Seconds after the brown-out ended until the preferred region served most reads of a one-second window again. */
  secondsToPreferredAgain: number | undefined;
  extraRequests: number;
  reads: number;
}

function p50(latencies: readonly number[]): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function secondP50s(timeline: ModeTimeline): Map<number, number> {
  const buckets = new Map<number, number[]>();
  for (const read of timeline.reads) {
    const second = Math.floor(read.second);
    buckets.set(second, [...(buckets.get(second) ?? []), read.latencyMs]);
  }
  return new Map([...buckets].map(([second, latencies]) => [second, p50(latencies)]));
}

/**
 * Every mode at once on one emulator, so that all meet the same brown-out at
 * the same moment. The oracle mode must be among the modes: it is the
 * yardstick the others are measured against.
 */
export async function runBrownOut(modes: readonly ModeSpec[], settings = defaultBrownOut): Promise<BrownOutRow[]> {
  const regions = [{ name: preferred }, { name: "West US", latencyMs: 30 }];
  const { emulator, base } = await seeded(regions, 3);
  const clients = modes.map((mode) => new CosmosClient(modeClientOptions(mode, base, emulator)));
  const regionOf = (endpoint: string): string | undefined =>
    emulator.regions.find((region) => new URL(region.endpoint).host === new URL(endpoint).host)?.name;
  try {
    const timelineModes = modes.map((mode, m) => {
      const container = clients[m]!.database("bench").container("items");
      return { name: mode.name, read: async (index: number) => describeRead(await container.item(...itemKey(index)).read(), regionOf) };
    });
    for (const mode of timelineModes) for (let i = 0; i < 20; i++) await mode.read(i);
    const phases: Phase[] = [
      { label: "healthy", seconds: settings.healthySeconds },
      {
        label: "brown-out",
        seconds: settings.brownOutSeconds,
        fault: true,
        begin: () => {
          const rule = emulator.region(preferred).addFault({ operations: ["pointRead"], delayMs: settings.delayMs });
          return () => rule.remove();
        },
      },
      { label: "recovered", seconds: settings.recoverySeconds },
    ];
    const timelines = await runTimeline(timelineModes, phases, { concurrencyPerMode: settings.concurrencyPerMode });
    const start = settings.healthySeconds;
    const end = start + settings.brownOutSeconds;
    const oracle = timelines.find((timeline) => timeline.name === modes.find((mode) => mode.kind === "oracle")?.name);
    const oracleP50s = oracle === undefined ? new Map<number, number>() : secondP50s(oracle);
    return timelines.map((timeline) => {
      const perSecond = secondP50s(timeline);
      let secondsToOracleP50: number | undefined;
      for (let second = start; second < end; second++) {
        const mine = perSecond.get(second);
        const best = oracleP50s.get(second);
        if (mine !== undefined && best !== undefined && mine <= best * 1.1) {
          secondsToOracleP50 = second - start;
          break;
        }
      }
      let secondsToPreferredAgain: number | undefined;
      for (let second = end; second < end + settings.recoverySeconds; second++) {
        const window = timeline.reads.filter((read) => Math.floor(read.second) === second);
        if (window.length > 0 && window.filter((read) => read.region === preferred).length / window.length > 0.5) {
          secondsToPreferredAgain = second - end;
          break;
        }
      }
      return {
        mode: timeline.name,
        brownOutP50: p50(timeline.reads.filter((read) => read.second >= start + 5 && read.second < end).map((read) => read.latencyMs)),
        secondsToOracleP50,
        secondsToPreferredAgain,
        extraRequests: timeline.reads.reduce((sum, read) => sum + read.extraRequests, 0) / Math.max(1, timeline.reads.length),
        reads: timeline.reads.length,
      };
    });
  } finally {
    disposeAll(clients);
    await emulator.close();
  }
}

/** The brown-out table. */
export function brownOutTable(rows: readonly BrownOutRow[], settings = defaultBrownOut): string {
  const seconds = (value: number | undefined): string => (value === undefined ? "never" : `${value} s`);
  return markdownTable(
    [
      "mode",
      "reads",
      `p50 ms, brown-out from +5 s`,
      "p50 within 10% of oracle after",
      `preferred region serves again after`,
      "extra requests",
    ],
    rows.map((row) => [
      row.mode,
      String(row.reads),
      ms(row.brownOutP50),
      seconds(row.secondsToOracleP50),
      seconds(row.secondsToPreferredAgain),
      percent(row.extraRequests),
    ]),
  ) + `\n\n(${settings.healthySeconds} s healthy, ${settings.brownOutSeconds} s with every read in the preferred region +${settings.delayMs} ms, ${settings.recoverySeconds} s healthy; every mode at once.)`;
}
