import { availableParallelism, loadavg } from "node:os";
import { CosmosClient } from "@azure/cosmos";
import type { CosmosClientOptions } from "@azure/cosmos";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import type { HedgingHttpClient, HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgingMetrics } from "../../src/diagnostics/metrics.js";
import { connectionRequestHeader } from "../../test/emulator/index.js";
import type { WanCounters } from "../../test/emulator/index.js";
import { seedContainer } from "../../test/support/cosmos.js";
import { LatencyRecorder, ms } from "../support/stats.js";
import type { LatencySummary } from "../support/stats.js";
import { markdownTable } from "../support/table.js";
import { startWanRig } from "../support/wanRig.js";
import { sweepHedging, sweepThresholdsMs } from "../support/hindsight.js";

const eastUs = "East US";
const westUs = "West US";
const northEurope = "North Europe";
const itemCount = 100;

/** Issue 15's case: a real network's round trips, 10 % of East US reads late by a second. */
export interface WanSettings {
  readonly reads: number;
  readonly concurrency: number;
  /**
   * Reads before the measured ones, with the stragglers already on, so that
   * pools and adaptive windows are warm. With losers drained, a straggling
   * region's pool grows to the reads in flight plus the drains in flight
   * (stragglers per second times their delay: about 50 here, against 10
   * without draining), and keeps growing while the drains in flight reach a
   * new high: 300 reads (one to two seconds) left it still growing through
   * the measured reads, 1500 left 0 to 6 connections to open, 3000 left 0 to
   * 2. The connections the warm-up opened are reported beside the measured ones.
   */
  readonly warmupReads: number;
  readonly rttMs: Readonly<Record<string, number>>;
  readonly stragglerShare: number;
  readonly stragglerDelayMs: number;
  /** Every mode runs on a fresh emulator with this seed, so that each sees the same straggler draws. */
  readonly seed: number;
}

export const defaultWanSettings: WanSettings = {
  reads: 600,
  concurrency: 10,
  warmupReads: 3000,
  rttMs: { [eastUs]: 2, [westUs]: 30, [northEurope]: 90 },
  stragglerShare: 0.1,
  stragglerDelayMs: 1000,
  seed: 7,
};

/** A client configuration of the WAN suite. */
export interface WanMode {
  readonly name: string;
  readonly preferred: readonly string[];
  /** Unset: plain `@azure/cosmos`. */
  readonly hedging?: HedgingOptions;
  /** The fronts' keep-alive timeout (see `WanOptions.keepAliveTimeoutMs`); unset, idle connections never expire. */
  readonly keepAliveTimeoutMs?: number;
  /** How the agent picks an idle socket; unset, Node's default (`"lifo"`). */
  readonly scheduling?: "fifo" | "lifo";
}

/** The regions in the order every mode but the oracle prefers them: East US, where the stragglers are, first. */
export const wanPreferredOrder: readonly string[] = [eastUs, westUs, northEurope];

/** The modes of the table: before (losers aborted) and after (losers drained), side by side. */
export const wanModes: readonly WanMode[] = [
  { name: "plain @azure/cosmos", preferred: wanPreferredOrder },
  { name: "fixed 100 / 50 ms, losers aborted (before)", preferred: wanPreferredOrder, hedging: { crossRegion: { threshold: 100, thresholdStep: 50, drainLosers: false } } },
  { name: "fixed 100 / 50 ms, losers drained", preferred: wanPreferredOrder, hedging: { crossRegion: { threshold: 100, thresholdStep: 50 } } },
  { name: "adaptive, losers aborted (before)", preferred: wanPreferredOrder, hedging: { crossRegion: { threshold: "adaptive", drainLosers: false } } },
  { name: "adaptive, losers drained", preferred: wanPreferredOrder, hedging: { crossRegion: { threshold: "adaptive" } } },
  // A server that closes a connection idle for 5 s (Node's default): sockets the pool grew for drains may expire and be opened again.
  { name: "fixed 100 / 50 ms, losers drained, server keep-alive 5 s", preferred: wanPreferredOrder, hedging: { crossRegion: { threshold: 100, thresholdStep: 50 } }, keepAliveTimeoutMs: 5000 },
  { name: "adaptive, losers drained, server keep-alive 5 s", preferred: wanPreferredOrder, hedging: { crossRegion: { threshold: "adaptive" } }, keepAliveTimeoutMs: 5000 },
  // "fifo" keeps every pooled socket in turn, so none idles long enough to expire; "lifo" lets the ones a pool no longer needs expire.
  {
    name: "adaptive, losers drained, server keep-alive 5 s, agent fifo",
    preferred: wanPreferredOrder,
    hedging: { crossRegion: { threshold: "adaptive" } },
    keepAliveTimeoutMs: 5000,
    scheduling: "fifo",
  },
  { name: "oracle (plain, West US preferred)", preferred: [westUs, eastUs, northEurope] },
];

/** The sweep of fixed thresholds (one hedge each, losers drained) that finds the hindsight-best one for the adaptive modes. */
export const wanSweepModes: readonly WanMode[] = sweepThresholdsMs.map((thresholdMs) => ({
  name: `sweep: fixed ${thresholdMs} ms, one hedge`,
  preferred: wanPreferredOrder,
  hedging: sweepHedging(thresholdMs),
}));

/** Which arm opened the measured reads' new connections, from the response that came back on each. */
export interface ConnectionOpeners {
  /** Primaries that answered, and the reads of a plain client. */
  readonly primaries: number;
  /** Primaries that lost and drained: stragglers that found no idle socket when they were sent. */
  readonly drainedPrimaries: number;
  readonly hedgesWon: number;
  readonly hedgesDrained: number;
  /** Requests whose response no race recorded (metadata reads), and arms aborted before their response. */
  readonly other: number;
}

/** One mode's figures over the measured reads. */
export interface WanRow {
  readonly mode: string;
  readonly latency: LatencySummary;
  /** The same latencies, every one (for the yardstick's interval). */
  readonly latencySamples: readonly number[];
  readonly errors: number;
  /** Point reads that reached any region, per read. */
  readonly requestsPerRead: number;
  /** What the WAN counted during the measured reads, every region together and per region. */
  readonly counters: WanCounters;
  readonly countersByRegion: Readonly<Record<string, WanCounters>>;
  /** New TCP connections per region during the warm-up: the pools growing to their size. */
  readonly warmupConnectionsByRegion: Readonly<Record<string, number>>;
  /** Connections open per region once the measured reads and their drains have ended: the pools' size. */
  readonly openByRegion: Readonly<Record<string, number>>;
  readonly openers: ConnectionOpeners;
  /** The most drains in flight seen at the end of a measured read. */
  readonly peakDrains?: number;
  /** When the measured reads' first hedges were launched, from the start of their race: what a hedged read waits before its hedge runs. */
  readonly hedgeLaunch?: { readonly p50: number; readonly p90: number; readonly count: number };
  /** Reads whose answer came from a West US hedge, and of those, how many on a connection opened for it. */
  readonly westHedgeWins: number;
  readonly westHedgeWinsOnNewConnection: number;
  /** The hedging client's loser counts over the measured reads (absent for plain modes). */
  readonly losers?: HedgingMetrics["losers"];
  /** Reads of the measured ones whose hedge the load budget refused. */
  readonly budgetExhausted?: number;
  /** The machine's one-minute load average at the end of the mode: the latencies mean little on a busy machine. */
  readonly loadAverage: number;
  /** The threshold of each measured read that answered, and where it came from, as the count cases read it (empty for plain modes). */
  readonly thresholds: { readonly ms: number; readonly source: string }[];
}

function itemKey(index: number): [string, string] {
  const id = index % itemCount;
  return [`item-${id}`, `pk-${id % 10}`];
}

/** Runs `total` reads with `concurrency` in flight; bounded in count, so it always ends. */
async function closedLoop(total: number, concurrency: number, read: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) await read(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

function subtract(after: HedgingMetrics["losers"], before: HedgingMetrics["losers"]): HedgingMetrics["losers"] {
  return {
    drained: after.drained - before.drained,
    drainsCutShort: after.drainsCutShort - before.drainsCutShort,
    aborted: after.aborted - before.aborted,
    drainsInFlight: after.drainsInFlight,
  };
}

/**
 * The transport of a mode, which notes the activity id of every response
 * that came back on a connection opened for it, so that the arm that
 * opened it can be found in the race's diagnostics.
 */
function noticingNewConnections(freshActivityIds: Set<string>, counting: () => boolean): HttpClient {
  const transport = createDefaultHttpClient();
  return {
    async sendRequest(request) {
      // A request sent in the warm-up opened its connection before the counters were reset.
      const counted = counting();
      const response = await transport.sendRequest(request);
      if (counted && response.headers.get(connectionRequestHeader) === "1") freshActivityIds.add(response.headers.get("x-ms-activity-id") ?? "");
      return response;
    },
  };
}

function hedgeLaunchOf(records: readonly HedgeDiagnostics[]): Pick<WanRow, "hedgeLaunch"> {
  const launches = new LatencyRecorder();
  let count = 0;
  for (const record of records) {
    const hedge = record.arms.find((arm) => arm.reason !== "primary");
    if (hedge === undefined) continue;
    launches.record(hedge.startOffsetMs);
    count += 1;
  }
  return count === 0 ? {} : { hedgeLaunch: { p50: launches.valueAt(50), p90: launches.valueAt(90), count } };
}

function openersOf(freshActivityIds: ReadonlySet<string>, records: readonly HedgeDiagnostics[]): ConnectionOpeners {
  const counts = { primaries: 0, drainedPrimaries: 0, hedgesWon: 0, hedgesDrained: 0, other: 0 };
  const found = new Set<string>();
  for (const record of records) {
    for (const arm of record.arms) {
      if (arm.activityId === undefined || !freshActivityIds.has(arm.activityId)) continue;
      found.add(arm.activityId);
      const primary = arm.reason === "primary";
      if (arm.outcome === "drained") counts[primary ? "drainedPrimaries" : "hedgesDrained"] += 1;
      else if (arm.outcome === "returned") counts[primary ? "primaries" : "hedgesWon"] += 1;
      else counts.other += 1;
    }
  }
  counts.primaries += records.length === 0 ? freshActivityIds.size : 0;
  counts.other += records.length === 0 ? 0 : freshActivityIds.size - found.size;
  return counts;
}

/** Waits until a hedging client's drains have ended (they end within `maxDrainMs`), so that every arm's record is complete. */
async function drainsEnded(client: HedgingHttpClient | undefined): Promise<void> {
  const limit = performance.now() + 10_000;
  while (client !== undefined && client.metrics().losers.drainsInFlight > 0 && performance.now() < limit) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function runMode(mode: WanMode, settings: WanSettings): Promise<WanRow> {
  const rig = await startWanRig(settings, mode);
  const { emulator, wan, agent } = rig;
  let client: CosmosClient | undefined;
  try {
    // Seeded over plain loopback HTTP: the WAN is for the reads under test.
    const seeder = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false } });
    const items = Array.from({ length: itemCount }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 10}` }));
    await seedContainer(seeder, { database: "bench", container: "items", items });
    seeder.dispose();

    let measuring = false;
    const freshActivityIds = new Set<string>();
    const records: HedgeDiagnostics[] = [];
    const base: CosmosClientOptions = {
      endpoint: wan.endpoint,
      key: emulator.key,
      agent,
      httpClient: noticingNewConnections(freshActivityIds, () => measuring),
      connectionPolicy: { preferredLocations: [...mode.preferred], enableBackgroundEndpointRefreshing: false },
    };
    const options =
      mode.hedging === undefined
        ? base
        : withHedging(base, {
            ...mode.hedging,
            onDiagnostics: (record) => {
              if (measuring) records.push(record);
            },
          });
    const hedgingClient = mode.hedging === undefined ? undefined : (options.httpClient as HedgingHttpClient);
    client = new CosmosClient(options);
    const container = client.database("bench").container("items");
    await emulator.addFault(eastUs, { operations: ["pointRead"], delayMs: settings.stragglerDelayMs, probability: settings.stragglerShare });

    await closedLoop(settings.warmupReads, settings.concurrency, async (index) => {
      await container.item(...itemKey(index)).read();
    });
    const warmupConnectionsByRegion = Object.fromEntries((await wan.figures()).regions.map((region) => [region.name, region.counters.tcpConnections]));
    await emulator.resetCounters();
    await wan.resetCounters();
    measuring = true;
    const before = hedgingClient?.metrics();

    const latencies = new LatencyRecorder();
    let errors = 0;
    let westHedgeWins = 0;
    let westHedgeWinsOnNewConnection = 0;
    let peakDrains = 0;
    const thresholds: WanRow["thresholds"] = [];
    await closedLoop(settings.reads, settings.concurrency, async (index) => {
      const began = performance.now();
      try {
        const response = await container.item(...itemKey(settings.warmupReads + index)).read();
        latencies.record(performance.now() - began);
        const diagnostics = getHedgeDiagnostics(response.headers);
        if (diagnostics?.thresholdMs !== undefined) thresholds.push({ ms: diagnostics.thresholdMs, source: diagnostics.thresholdSource ?? "options" });
        if (diagnostics?.hedgeWon === true && diagnostics.winningRegion === westUs) {
          westHedgeWins += 1;
          if (response.headers[connectionRequestHeader] === "1") westHedgeWinsOnNewConnection += 1;
        }
      } catch {
        latencies.record(performance.now() - began);
        errors += 1;
      }
      peakDrains = Math.max(peakDrains, hedgingClient?.metrics().losers.drainsInFlight ?? 0);
    });
    const measured = await wan.figures();
    const countersByRegion = Object.fromEntries(measured.regions.map((region) => [region.name, region.counters]));
    const { counters } = measured;
    const after = hedgingClient?.metrics();
    measuring = false;
    await drainsEnded(hedgingClient);
    const openByRegion = Object.fromEntries((await wan.figures()).regions.map((region) => [region.name, region.openConnections]));
    return {
      mode: mode.name,
      latency: latencies.summary(),
      latencySamples: latencies.samples(),
      errors,
      requestsPerRead: (await emulator.count("pointRead")) / settings.reads,
      counters,
      countersByRegion,
      warmupConnectionsByRegion,
      openByRegion,
      openers: openersOf(freshActivityIds, records),
      ...hedgeLaunchOf(records),
      westHedgeWins,
      westHedgeWinsOnNewConnection,
      ...(after !== undefined && before !== undefined
        ? { losers: subtract(after.losers, before.losers), budgetExhausted: after.budgetExhausted - before.budgetExhausted, peakDrains }
        : {}),
      loadAverage: loadavg()[0] ?? 0,
      thresholds,
    };
  } finally {
    await rig.close(client);
  }
}

/** Runs every mode, one after the other, in one process. */
export async function runWanSuite(settings: WanSettings = defaultWanSettings, modes: readonly WanMode[] = wanModes): Promise<WanRow[]> {
  const rows: WanRow[] = [];
  for (const mode of modes) {
    console.log(`  ${mode.name}...`);
    rows.push(await runMode(mode, settings));
  }
  return rows;
}

function per1000(count: number, reads: number): string {
  return ((count * 1000) / reads).toFixed(0);
}

/** The table of the WAN suite. */
export function wanTable(rows: readonly WanRow[], settings: WanSettings = defaultWanSettings): string {
  return markdownTable(
    [
      "mode",
      "p50 ms",
      "p99 ms",
      "max ms",
      "TLS handshakes / 1000 reads (full + resumed)",
      "new TCP connections / 1000 reads",
      "requests / read",
      "West US hedge wins (on a new connection)",
      "losers drained / cut short / aborted",
      "hedges refused by the budget",
      "errors",
      "load average",
    ],
    rows.map((row) => [
      row.mode,
      ms(row.latency.p50),
      ms(row.latency.p99),
      ms(row.latency.max),
      `${per1000(row.counters.fullHandshakes + row.counters.resumedHandshakes, settings.reads)} (${row.counters.fullHandshakes} + ${row.counters.resumedHandshakes})`,
      per1000(row.counters.tcpConnections, settings.reads),
      row.requestsPerRead.toFixed(2),
      `${row.westHedgeWins} (${row.westHedgeWinsOnNewConnection})`,
      row.losers === undefined ? "" : `${row.losers.drained} / ${row.losers.drainsCutShort} / ${row.losers.aborted}`,
      row.budgetExhausted === undefined ? "" : String(row.budgetExhausted),
      String(row.errors),
      row.loadAverage.toFixed(1),
    ]),
  );
}

function byRegion(counts: Readonly<Record<string, number>>): string {
  return [eastUs, westUs, northEurope].map((region) => counts[region] ?? 0).join(" / ");
}

/** Where each mode's connections came from: the pools' growth in the warm-up, the measured reads' new connections by the arm that opened them, the pools' size at the end. */
export function wanConnectionTable(rows: readonly WanRow[]): string {
  return markdownTable(
    [
      "mode",
      "new connections in the warm-up, East / West US / North Europe",
      "new connections measured, East / West US / North Europe",
      "measured ones opened by: primaries / stragglers drained / hedges won / hedges drained / other",
      "connections open at the end, East / West US / North Europe",
      "drains in flight at most",
      "hedges launched after, p50 / p90 ms (hedged reads)",
    ],
    rows.map((row) => [
      row.mode,
      byRegion(row.warmupConnectionsByRegion),
      byRegion(Object.fromEntries(Object.entries(row.countersByRegion).map(([region, counts]) => [region, counts.tcpConnections]))),
      [row.openers.primaries, row.openers.drainedPrimaries, row.openers.hedgesWon, row.openers.hedgesDrained, row.openers.other].join(" / "),
      byRegion(row.openByRegion),
      row.peakDrains === undefined ? "" : String(row.peakDrains),
      row.hedgeLaunch === undefined ? "" : `${ms(row.hedgeLaunch.p50)} / ${ms(row.hedgeLaunch.p90)} (${row.hedgeLaunch.count})`,
    ]),
  );
}

/** The targets, each with what this run measured and whether it holds. */
export function wanTargets(rows: readonly WanRow[], settings: WanSettings = defaultWanSettings): string {
  const row = (prefix: string): WanRow | undefined => rows.find((candidate) => candidate.mode.startsWith(prefix));
  const oracle = row("oracle");
  const adaptive = row("adaptive, losers drained");
  const fixed = row("fixed 100 / 50 ms, losers drained");
  const lines: string[] = [];
  const verdict = (holds: boolean): string => (holds ? "holds" : "does not hold");
  if (oracle !== undefined && adaptive !== undefined) {
    const limit = 1.2 * oracle.latency.p99;
    lines.push(`- Adaptive (drained) p99 <= 1.2 x oracle p99 = ${ms(limit)} ms: ${ms(adaptive.latency.p99)} ms, ${verdict(adaptive.latency.p99 <= limit)}.`);
  }
  if (fixed !== undefined) {
    const limit = 100 + (settings.rttMs[westUs] ?? 0) + 25;
    lines.push(`- Fixed 100 ms (drained) p99 <= threshold + West US RTT + 25 ms = ${limit} ms: ${ms(fixed.latency.p99)} ms, ${verdict(fixed.latency.p99 <= limit)}.`);
  }
  const worst = rows.reduce((high, candidate) => {
    const handshakes = ((candidate.counters.fullHandshakes + candidate.counters.resumedHandshakes) * 1000) / settings.reads;
    return handshakes > high.handshakes ? { handshakes, mode: candidate.mode } : high;
  }, { handshakes: 0, mode: "" });
  const drainedRows = rows.filter((candidate) => !candidate.mode.includes("aborted"));
  const worstDrained = Math.max(...drainedRows.map((candidate) => ((candidate.counters.fullHandshakes + candidate.counters.resumedHandshakes) * 1000) / settings.reads));
  lines.push(
    `- TLS handshakes per 1000 reads <= 40 in every mode: at most ${worstDrained.toFixed(0)} with losers drained, ${verdict(worstDrained <= 40)}; ` +
      `${worst.handshakes.toFixed(0)} in "${worst.mode}".`,
  );
  const freshWins = drainedRows.reduce((sum, candidate) => sum + candidate.westHedgeWinsOnNewConnection, 0);
  lines.push(`- No West US hedge that won on a new connection after the warm-up (losers drained): ${freshWins}, ${verdict(freshWins === 0)}.`);
  return lines.join("\n");
}

/** The suite's Markdown: what was run, the table, and the targets. */
export function wanSection(rows: readonly WanRow[], settings: WanSettings = defaultWanSettings): string {
  const rtts = Object.entries(settings.rttMs)
    .map(([region, rtt]) => `${region} ${rtt} ms`)
    .join(", ");
  return (
    `${settings.reads} point reads at concurrency ${settings.concurrency} (after ${settings.warmupReads} warm-up reads) through the real ` +
    `\`@azure/cosmos\` over the emulator's WAN mode: HTTPS (TLS 1.3) behind a TCP proxy per region that charges the round-trip time ` +
    `(${rtts}) per chunk and per connect; ${settings.stragglerShare * 100} % of East US reads ${settings.stragglerDelayMs} ms late. ` +
    `Handshakes and connections are counted at the WAN during the measured reads; every mode runs on a fresh emulator with the same seed, in a process of its own, ` +
    `whose fronts keep idle connections open unless the mode says otherwise. ` +
    `The connection counts hold whatever the load; the latencies compare only on a machine whose load average stays below its ` +
    `${availableParallelism()} cores, and a straggler whose hedge the budget refused costs its full second.\n\n` +
    `${wanTable(rows, settings)}\n\nWhere the connections came from (the arm that opened a connection is the one whose response came back on it; ` +
    `a connection is opened when a request finds no idle socket in the pool):\n\n${wanConnectionTable(rows)}\n\n` +
    `Targets of issue 15:\n\n${wanTargets(rows, settings)}\n`
  );
}
