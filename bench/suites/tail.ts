import { CosmosClient } from "@azure/cosmos";
import type { CosmosClientOptions } from "@azure/cosmos";
import { startEmulator } from "../../test/emulator/index.js";
import type { Emulator, EmulatorRegionSpec, FaultHandle, FaultRule } from "../../test/emulator/index.js";
import { seedContainer } from "../../test/support/cosmos.js";
import { ChargeLedger } from "../support/chargeLedger.js";
import { chargeOf, describeRead, disposeAll, modeClientOptions } from "../support/modes.js";
import type { ModeSpec } from "../support/modes.js";
import type { LatencySummary } from "../support/stats.js";
import { LatencyRecorder, ms, percent } from "../support/stats.js";
import { markdownTable } from "../support/table.js";
import type { OfferedLoad, OpenLoopResult } from "../support/openLoop.js";
import { describeLoad, runOpenLoop } from "../support/openLoop.js";
import type { ModeTimeline, Phase, ReadDetail, TimedRead } from "../support/timeline.js";
import { runTimeline } from "../support/timeline.js";
import type { EmulatorHost } from "../support/remoteEmulator.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { secondP99s } from "../support/hindsight.js";

const itemCount = 100;
const preferred = "East US";
/** Each client is warmed at the offered rate (connections, caches, learned thresholds) before anything is timed. */
export const defaultWarmUpMs = 1000;

/** A fault rule of one region of a case. */
export interface RegionFault {
  region: string;
  rule: FaultRule;
}

/** A count-based case: the same reads, offered at the same rate, to each mode, each on its own emulator with the same seed. */
export interface CountScenario {
  name: string;
  reads: number;
  regions: EmulatorRegionSpec[];
  /**
   * What degrades the account once the clients are warm, installed in this
   * order (the first rule that wins its draw applies). Data, not a function,
   * so that an emulator in another process can install them too.
   */
  faults?: readonly RegionFault[];
}

/**
 * The load of every count-based case, per mode. With six modes at once the
 * process needs about a fifth of a core (a read through the client and the
 * in-process emulator costs about 1.5 ms of CPU), which it still gets when
 * other work shares the 2 cores; at twice the rate, an open loop on a busy
 * machine fell behind and never caught up (start lags of seconds). Poisson
 * arrivals from one seed, so that every mode meets the same bursts.
 */
export const defaultTailLoad: OfferedLoad = { ratePerSecond: 30, arrivals: "poisson", seed: 7, maxInFlight: 256 };

/** One mode's figures in a case. */
export interface TailRow {
  scenario: string;
  mode: string;
  kind: ModeSpec["kind"];
  ratePerSecond: number;
  /** Latency from each read's scheduled start. */
  latency: LatencySummary;
  /** The same latencies, every one (for the yardstick's interval). */
  latencySamples: readonly number[];
  /** Requests that reached the service beyond one per read. */
  extraRequests: number;
  /**
   * The share of reads the case's faults were applied to (its stragglers, as the seed drew them; the same for every
   * mode of a pass, since each mode's emulator draws from the same seed once per primary), or 0 for a case without.
   */
  faultedShare: number;
  /** Every request that reached the service, per read. */
  requestsPerRead: number;
  /** Request units of every arm that answered (drained losers included), per read. */
  requestUnitsPerRead: number;
  /** The same request units per second of the span the reads were offered in. */
  requestUnitsPerSecond: number;
  hedgesWon: number;
  /** Reads that waited for the in-flight bound. */
  boundHits: number;
  /** The 99th percentile of how late reads started after their scheduled time. */
  startLagP99: number;
  errors: number;
  /** The p99 of the reads scheduled in each second since the case's fault began (index 0: its first second). */
  secondP99s: (number | undefined)[];
  /** Reads a hedge of which the budget refused. */
  refusedHedges: number;
  /** The seconds since the case's fault began in which the budget refused a hedge, each once. */
  refusedSeconds: number[];
  /** The threshold of every read that reported one, in the order the reads were scheduled. */
  thresholds: { readonly ms: number; readonly source: string }[];
}

/** Healthy regions: what hedging costs when nothing is wrong. */
export const healthy: CountScenario = {
  name: "healthy",
  reads: 1000,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
};

/** Issue 13's noisy but healthy account: the preferred region jitters by 2-20 ms, nowhere near the 30 ms a hedge costs. */
export const noisyHealthy: CountScenario = {
  name: "noisy but healthy: every read +2-20 ms",
  reads: 1000,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
  faults: [{ region: preferred, rule: { operations: ["pointRead"], delayMs: { min: 2, max: 20 } } }],
};

/** Issue 3's stragglers: 10 % of point reads in the preferred region take 1 s more; the next region is 30 ms away. */
export const stragglers: CountScenario = {
  name: "stragglers: 10% of reads +1 s",
  reads: 1000,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
  faults: [{ region: preferred, rule: { operations: ["pointRead"], delayMs: 1000, probability: 0.1 } }],
};

/** Issue 13's mixed tail: 2 % of reads +1 s and 8 % +150 ms in the preferred region. */
export const mixedTail: CountScenario = {
  name: "mixed tail: 2% +1 s, 8% +150 ms",
  reads: 1000,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
  faults: [
    { region: preferred, rule: { operations: ["pointRead"], delayMs: 1000, probability: 0.02 } },
    // The first rule that wins its draw applies: 8 % of all reads is 8 / 98 of those the first rule spared.
    { region: preferred, rule: { operations: ["pointRead"], delayMs: 150, probability: 0.08 / 0.98 } },
  ],
};

/** Every region slow: hedging cannot help, and the budget must keep it from adding load. */
export const overload: CountScenario = {
  name: "overload: every region +100-160 ms",
  reads: 600,
  regions: [{ name: preferred }, { name: "West US", latencyMs: 30 }],
  faults: [preferred, "West US"].map((region) => ({ region, rule: { operations: ["pointRead"], delayMs: { min: 100, max: 160 } } })),
};

/** The count-based cases of `npm run bench`, in the order it runs them. */
export const countScenarios: readonly CountScenario[] = [healthy, noisyHealthy, stragglers, mixedTail, overload];

function itemKey(index: number): [string, string] {
  const id = index % itemCount;
  return [`item-${id}`, `pk-${id % 10}`];
}

/**
 * A case's emulator as the count-based cases drive it: in this process,
 * where the oracle can ask it what it will do, or in a host process of its
 * own (see `startEmulatorHost`), where its CPU and its event loop are not
 * the client's, so that the client can be offered several times the load.
 */
interface CaseEmulator {
  readonly regions: readonly { readonly name: string; readonly endpoint: string }[];
  /** The emulator itself when it runs in this process. */
  readonly local: Emulator | undefined;
  /** Installs one rule in one region, after its existing ones; resolves to its removal. */
  addFault(fault: RegionFault): Promise<() => Promise<void>>;
  install(faults: readonly RegionFault[]): Promise<void>;
  count(kind: OperationKind): Promise<number>;
  /** How many requests the rules installed on it so far have been applied to: the stragglers its seed drew. */
  faultsApplied(): Promise<number>;
  resetCounters(): Promise<void>;
  close(): Promise<void>;
}

async function caseEmulator(regions: EmulatorRegionSpec[], seed: number, host: EmulatorHost | undefined): Promise<CaseEmulator & { endpoint: string; key: string }> {
  if (host !== undefined) {
    const remote = await host.start({ regions, seed });
    return {
      endpoint: remote.endpoint,
      key: remote.key,
      regions: remote.regions,
      local: undefined,
      addFault: ({ region, rule }) => remote.addFault(region, rule),
      install: async (faults) => {
        for (const { region, rule } of faults) await remote.addFault(region, rule);
      },
      count: (kind) => remote.count(kind),
      faultsApplied: () => remote.faultsApplied(),
      resetCounters: () => remote.resetCounters(),
      close: () => remote.close(),
    };
  }
  const emulator = await startEmulator({ regions, seed, recordRequests: false });
  const handles: FaultHandle[] = [];
  return {
    endpoint: emulator.endpoint,
    key: emulator.key,
    regions: emulator.regions,
    local: emulator,
    addFault: async ({ region, rule }) => {
      const handle = emulator.region(region).addFault(rule);
      handles.push(handle);
      return async () => handle.remove();
    },
    install: async (faults) => {
      for (const { region, rule } of faults) handles.push(emulator.region(region).addFault(rule));
    },
    count: async (kind) => emulator.count(kind),
    faultsApplied: async () => handles.reduce((sum, handle) => sum + handle.applied, 0),
    resetCounters: async () => emulator.resetCounters(),
    close: () => emulator.close(),
  };
}

/** Seeds an account's items and returns the options every mode's client is built over. */
async function seededOptions(account: { endpoint: string; key: string }, regions: readonly EmulatorRegionSpec[]): Promise<CosmosClientOptions> {
  const seeder = new CosmosClient({ endpoint: account.endpoint, key: account.key });
  const items = Array.from({ length: itemCount }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 10}` }));
  await seedContainer(seeder, { database: "bench", container: "items", items });
  seeder.dispose();
  return {
    endpoint: account.endpoint,
    key: account.key,
    connectionPolicy: { preferredLocations: regions.map((region) => region.name), enableBackgroundEndpointRefreshing: false },
  };
}

function regionFinder(emulator: Pick<CaseEmulator, "regions">): (endpoint: string) => string | undefined {
  return (endpoint) => emulator.regions.find((region) => new URL(region.endpoint).host === new URL(endpoint).host)?.name;
}

/** One mode's client on its own emulator, warmed and ready. */
interface PreparedMode {
  mode: ModeSpec;
  emulator: CaseEmulator;
  client: CosmosClient;
  ledger: ChargeLedger | undefined;
  read: (index: number) => Promise<ReadDetail>;
}

async function prepareMode(scenario: CountScenario, mode: ModeSpec, seed: number, host: EmulatorHost | undefined): Promise<PreparedMode> {
  const emulator = await caseEmulator(scenario.regions, seed, host);
  const base = await seededOptions(emulator, scenario.regions);
  const ledger = mode.kind === "hedging" ? new ChargeLedger() : undefined;
  const client = new CosmosClient(modeClientOptions(mode, base, emulator.local, ledger));
  const container = client.database("bench").container("items");
  const regionOf = regionFinder(emulator);
  return { mode, emulator, client, ledger, read: async (index) => describeRead(await container.item(...itemKey(index)).read(), regionOf) };
}

async function tailRow(scenario: CountScenario, prepared: PreparedMode, result: OpenLoopResult<ReadDetail>): Promise<TailRow> {
  const answered = result.reads.flatMap((read) => (read.detail === undefined ? [] : [read.detail]));
  const charge = await chargeOf(prepared.ledger, answered);
  // Counted after the drains, so that a loser still draining at the end is counted too.
  const sent = await prepared.emulator.count("pointRead");
  const faulted = await prepared.emulator.faultsApplied();
  return {
    scenario: scenario.name,
    mode: prepared.mode.name,
    kind: prepared.mode.kind,
    ratePerSecond: result.ratePerSecond,
    latency: result.latencies.summary(),
    latencySamples: result.latencies.samples(),
    extraRequests: (sent - scenario.reads) / scenario.reads,
    faultedShare: faulted / scenario.reads,
    requestsPerRead: sent / scenario.reads,
    requestUnitsPerRead: charge / scenario.reads,
    // Over the span the reads were offered in, so that a mode whose last reads end late is not charged less per second.
    requestUnitsPerSecond: charge / (scenario.reads / result.ratePerSecond),
    hedgesWon: answered.filter((detail) => detail.region !== undefined && detail.region !== preferred).length,
    boundHits: result.boundHits,
    startLagP99: result.startLag.valueAt(99),
    errors: result.errors,
    secondP99s: secondP99s(result.reads),
    refusedHedges: result.reads.filter((read) => read.detail?.refused === true).length,
    thresholds: answered.flatMap((detail) => (detail.threshold === undefined ? [] : [detail.threshold])),
    refusedSeconds: [...new Set(result.reads.filter((read) => read.detail?.refused === true).map((read) => Math.floor(read.scheduledMs / 1000)))].sort((a, b) => a - b),
  };
}

/** How {@link runCountScenario} runs a case. */
export interface CountScenarioSettings {
  /** Default {@link defaultTailLoad}. */
  load?: OfferedLoad;
  /** The emulators' fault seed. Default 7. */
  seed?: number;
  /** Runs the emulators in this host process instead of this one (the oracle mode then cannot run). */
  host?: EmulatorHost;
  /** Milliseconds of healthy reads at the offered rate before the faults and the measurement begin. Default {@link defaultWarmUpMs}. */
  warmUpMs?: number;
}

/**
 * Runs every mode through the case at the same time, each on its own
 * emulator with the same fault seed (so that the same reads straggle for
 * each) and each offered the same open-loop load, staggered by a fraction of
 * the mean gap. At the same time, not one after the other: on a shared
 * machine, a stall then hits every mode at the same moment instead of
 * whichever mode happened to be running, so the ratios between modes hold.
 * The price: one mode's extra requests load the machine for all.
 */
export async function runCountScenario(scenario: CountScenario, modes: readonly ModeSpec[], settings: CountScenarioSettings = {}): Promise<TailRow[]> {
  const { load = defaultTailLoad, seed = 7, host, warmUpMs = defaultWarmUpMs } = settings;
  const prepared: PreparedMode[] = [];
  try {
    for (const mode of modes) prepared.push(await prepareMode(scenario, mode, seed, host));
    await Promise.all(prepared.map((each) => runOpenLoop({ ...load, durationMs: warmUpMs }, each.read)));
    for (const each of prepared) {
      await each.emulator.resetCounters();
      each.ledger?.clear();
      await each.emulator.install(scenario.faults ?? []);
    }
    const staggerMs = 1000 / load.ratePerSecond / prepared.length;
    const results = await Promise.all(
      prepared.map((each, m) => runOpenLoop({ ...load, reads: scenario.reads, offsetMs: m * staggerMs }, each.read)),
    );
    return await Promise.all(prepared.map((each, m) => tailRow(scenario, each, results[m]!)));
  } finally {
    for (const each of prepared) {
      each.client.dispose();
      await each.emulator.close();
    }
  }
}

/** `a / b` as a ratio for a table, or a dash when there is no yardstick. */
function ratio(value: number, yardstick: number | undefined): string {
  return yardstick === undefined || !(yardstick > 0) ? "-" : (value / yardstick).toFixed(2);
}

/** How many reads lie above a percentile: what a figure rests on. */
function tailReads(reads: number, percentile: number): string {
  const above = reads * (1 - percentile / 100);
  return above >= 10 ? above.toFixed(0) : above.toFixed(1);
}

/** One case's table, every mode in it measured against the case's oracle row. */
export function tailTable(rows: readonly TailRow[]): string {
  const oracle = rows.find((row) => row.kind === "oracle")?.latency;
  return markdownTable(
    [
      "mode",
      "reads",
      "p50 ms",
      "p99 ms",
      "p99.9 ms",
      "max ms",
      "÷ oracle p50 / p99 / p99.9",
      "requests/read",
      "extra requests",
      "RU/read",
      "RU/s",
      "served elsewhere",
      "start lag p99 ms",
      "bound hits",
      "hedges refused by the budget (in seconds)",
      "errors",
    ],
    rows.map((row) => [
      row.mode,
      String(row.latency.count),
      ms(row.latency.p50),
      ms(row.latency.p99),
      ms(row.latency.p999),
      ms(row.latency.max),
      [ratio(row.latency.p50, oracle?.p50), ratio(row.latency.p99, oracle?.p99), ratio(row.latency.p999, oracle?.p999)].join(" / "),
      row.requestsPerRead.toFixed(3),
      percent(row.extraRequests),
      row.requestUnitsPerRead.toFixed(2),
      row.requestUnitsPerSecond.toFixed(0),
      String(row.hedgesWon),
      ms(row.startLagP99),
      String(row.boundHits),
      row.refusedHedges === 0 ? "0" : `${row.refusedHedges} (${row.refusedSeconds.join(", ")})`,
      String(row.errors),
    ]),
  );
}

/** The line above a case's table: the offered load and what its percentiles rest on. */
export function tailCaption(rows: readonly TailRow[], load = defaultTailLoad): string {
  const reads = rows[0]?.latency.count ?? 0;
  return (
    `${describeLoad(load)}; every mode at once, each on its own emulator with the same fault seed, ${reads} reads per mode, ` +
    `so p99 rests on the slowest ${tailReads(reads, 99)} reads and p99.9 on the slowest ${tailReads(reads, 99.9)}. ` +
    `Latency runs from each read's scheduled start.`
  );
}

/** The brown-out case's settings: healthy, then every read in the preferred region slower, then healthy again. */
export interface BrownOutSettings {
  healthySeconds: number;
  brownOutSeconds: number;
  recoverySeconds: number;
  delayMs: number;
  /** Every mode runs at once on one emulator, each offered this load. */
  load: OfferedLoad;
  /** Every client, plain included, with the SDK's partition-level circuit breaker (`connectionPolicy.enablePartitionLevelCircuitBreaker`). */
  circuitBreaker?: boolean;
}

export const defaultBrownOut: BrownOutSettings = {
  healthySeconds: 5,
  brownOutSeconds: 20,
  recoverySeconds: 12,
  delayMs: 300,
  load: { ratePerSecond: 30, arrivals: "poisson", seed: 3, maxInFlight: 256 },
};

/** One mode's figures in the brown-out case. */
export interface BrownOutRow {
  mode: string;
  kind: ModeSpec["kind"];
  /** Reads scheduled between 5 s after the brown-out began and its end. */
  brownOutReads: number;
  /** p50 and p99 of those reads. */
  brownOutP50: number;
  brownOutP99: number;
  /** Their latencies, every one (for the yardstick's interval). */
  brownOutSamples: readonly number[];
  /** Seconds after the brown-out began until a one-second window's p50 came within 10 % of the oracle's. */
  secondsToOracleP50: number | undefined;
  /** Seconds after the brown-out ended until the preferred region served most reads of a one-second window again. */
  secondsToPreferredAgain: number | undefined;
  extraRequests: number;
  /** Request units of the arms that answered, per read and per second of the run. */
  requestUnitsPerRead: number;
  requestUnitsPerSecond: number;
  reads: number;
  boundHits: number;
  startLagP99: number;
  errors: number;
  /** The p99 of the reads scheduled in each second of the brown-out (index 0: its first second). */
  secondP99s: (number | undefined)[];
  /** The threshold each answered read of the brown-out from +5 s was given, where the mode reports one. */
  thresholds: NonNullable<ReadDetail["threshold"]>[];
}

function recorderOf(reads: readonly TimedRead[]): LatencyRecorder {
  const recorder = new LatencyRecorder();
  for (const read of reads) recorder.record(read.latencyMs);
  return recorder;
}

function secondP50s(timeline: ModeTimeline): Map<number, number> {
  const buckets = new Map<number, TimedRead[]>();
  for (const read of timeline.reads) {
    const second = Math.floor(read.second);
    buckets.set(second, [...(buckets.get(second) ?? []), read]);
  }
  return new Map([...buckets].map(([second, reads]) => [second, recorderOf(reads).valueAt(50)]));
}

/**
 * Every mode at once on one emulator, each offered the same open-loop load,
 * so that all meet the same brown-out at the same moment with the same
 * number of reads. The oracle mode must be among the modes: it is the
 * yardstick the others are measured against.
 */
export async function runBrownOut(modes: readonly ModeSpec[], settings = defaultBrownOut, host?: EmulatorHost): Promise<BrownOutRow[]> {
  const regions = [{ name: preferred }, { name: "West US", latencyMs: 30 }];
  const emulator = await caseEmulator(regions, 3, host);
  const seeded = await seededOptions(emulator, regions);
  const base = settings.circuitBreaker ? { ...seeded, connectionPolicy: { ...seeded.connectionPolicy, enablePartitionLevelCircuitBreaker: true } } : seeded;
  const ledgers = modes.map((mode) => (mode.kind === "hedging" ? new ChargeLedger() : undefined));
  const clients = modes.map((mode, m) => new CosmosClient(modeClientOptions(mode, base, emulator.local, ledgers[m])));
  const regionOf = regionFinder(emulator);
  try {
    const timelineModes = modes.map((mode, m) => {
      const container = clients[m]!.database("bench").container("items");
      return { name: mode.name, read: async (index: number) => describeRead(await container.item(...itemKey(index)).read(), regionOf) };
    });
    await Promise.all(timelineModes.map((mode) => runOpenLoop({ ...settings.load, durationMs: defaultWarmUpMs }, mode.read)));
    for (const ledger of ledgers) ledger?.clear();
    const phases: Phase[] = [
      { label: "healthy", seconds: settings.healthySeconds },
      {
        label: "brown-out",
        seconds: settings.brownOutSeconds,
        fault: true,
        begin: () => {
          // Over a host process the rule arrives one message later, for every mode alike (they share the emulator).
          const removal = emulator.addFault({ region: preferred, rule: { operations: ["pointRead"], delayMs: settings.delayMs } });
          return () => void removal.then((remove) => remove());
        },
      },
      { label: "recovered", seconds: settings.recoverySeconds },
    ];
    const timelines = await runTimeline(timelineModes, phases, { load: settings.load });
    const totalSeconds = settings.healthySeconds + settings.brownOutSeconds + settings.recoverySeconds;
    const start = settings.healthySeconds;
    const end = start + settings.brownOutSeconds;
    const oracle = timelines.find((timeline) => timeline.name === modes.find((mode) => mode.kind === "oracle")?.name);
    const oracleP50s = oracle === undefined ? new Map<number, number>() : secondP50s(oracle);
    const charges = await Promise.all(timelines.map((timeline, m) => chargeOf(ledgers[m], timeline.reads)));
    return timelines.map((timeline, m) => {
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
      const brownOutWindow = timeline.reads.filter((read) => read.second >= start + 5 && read.second < end);
      const brownOut = recorderOf(brownOutWindow);
      const reads = Math.max(1, timeline.reads.length);
      const charge = charges[m]!;
      return {
        mode: timeline.name,
        kind: modes[m]!.kind,
        brownOutReads: brownOut.summary().count,
        brownOutP50: brownOut.valueAt(50),
        brownOutP99: brownOut.valueAt(99),
        brownOutSamples: brownOut.samples(),
        secondsToOracleP50,
        secondsToPreferredAgain,
        extraRequests: timeline.reads.reduce((sum, read) => sum + read.extraRequests, 0) / reads,
        requestUnitsPerRead: charge / reads,
        requestUnitsPerSecond: charge / totalSeconds,
        reads: timeline.reads.length,
        boundHits: timeline.load.boundHits,
        startLagP99: timeline.load.startLag.valueAt(99),
        errors: timeline.load.errors,
        secondP99s: secondP99s(
          timeline.reads.map((read) => ({ scheduledMs: read.second * 1000, latencyMs: read.latencyMs })),
          start * 1000,
          end * 1000,
        ),
        thresholds: brownOutWindow.flatMap((read) => (read.failed || read.threshold === undefined ? [] : [read.threshold])),
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
  const oracle = rows.find((row) => row.kind === "oracle");
  return (
    `${describeLoad(settings.load)}; ${settings.healthySeconds} s healthy, ${settings.brownOutSeconds} s with every read in the ` +
    `preferred region +${settings.delayMs} ms, ${settings.recoverySeconds} s healthy; every mode at once on one emulator` +
    `${settings.circuitBreaker ? ", every client with the SDK's partition-level circuit breaker" : ""}. ` +
    `The brown-out percentiles are over the reads scheduled from 5 s after it began to its end.\n\n` +
    markdownTable(
      [
        "mode",
        "reads",
        "brown-out reads from +5 s",
        "p50 ms",
        "p99 ms",
        "÷ oracle p50 / p99",
        "p50 within 10% of oracle after",
        "preferred region serves again after",
        "requests/read",
        "extra requests",
        "RU/read",
        "RU/s",
        "start lag p99 ms",
        "bound hits",
        "errors",
      ],
      rows.map((row) => [
        row.mode,
        String(row.reads),
        String(row.brownOutReads),
        ms(row.brownOutP50),
        ms(row.brownOutP99),
        `${ratio(row.brownOutP50, oracle?.brownOutP50)} / ${ratio(row.brownOutP99, oracle?.brownOutP99)}`,
        seconds(row.secondsToOracleP50),
        seconds(row.secondsToPreferredAgain),
        (1 + row.extraRequests).toFixed(3),
        percent(row.extraRequests),
        row.requestUnitsPerRead.toFixed(2),
        row.requestUnitsPerSecond.toFixed(0),
        ms(row.startLagP99),
        String(row.boundHits),
        String(row.errors),
      ]),
    )
  );
}
