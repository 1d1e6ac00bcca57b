import { loadavg } from "node:os";
import { CosmosClient } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { connectionRequestHeader } from "../../test/emulator/index.js";
import { seedContainer } from "../../test/support/cosmos.js";
import { LatencyRecorder, ms } from "../support/stats.js";
import { markdownTable } from "../support/table.js";
import { startWanRig } from "../support/wanRig.js";

const eastUs = "East US";
const westUs = "West US";

/**
 * A client too quiet to keep its hedge region's connection in use: one read
 * at a time with a pause after each, a few of them late in East US, so that
 * West US sees a hedge about once a second, against servers that close
 * connections idle for longer than a given time. What one warm connection
 * per hedge region would save is the hedges that find theirs expired.
 */
export interface WanIdleSettings {
  readonly reads: number;
  readonly pauseMs: number;
  readonly thresholdMs: number;
  readonly stragglerShare: number;
  readonly stragglerDelayMs: number;
  readonly rttMs: Readonly<Record<string, number>>;
  /** The servers' keep-alive timeouts compared, in milliseconds; `undefined` never closes an idle connection. */
  readonly keepAliveTimeoutsMs: readonly (number | undefined)[];
  readonly seed: number;
}

export const defaultWanIdleSettings: WanIdleSettings = {
  reads: 200,
  pauseMs: 100,
  thresholdMs: 50,
  stragglerShare: 0.1,
  stragglerDelayMs: 300,
  rttMs: { [eastUs]: 2, [westUs]: 30, "North Europe": 90 },
  // Node's agent keeps no socket from a server announcing 1 s or less, so 2 s is the shortest that still pools.
  keepAliveTimeoutsMs: [undefined, 5000, 2000],
  seed: 7,
};

/** One server keep-alive timeout's figures. */
export interface WanIdleRow {
  readonly keepAliveTimeoutMs: number | undefined;
  /** Reads a West US hedge answered, and of those, how many on a connection opened for them (the first one always is). */
  readonly westHedgeWins: number;
  readonly westHedgeWinsOnNewConnection: number;
  readonly onReusedConnection: number | undefined;
  readonly onNewConnection: number | undefined;
  readonly westConnections: number;
  readonly loadAverage: number;
}

async function runTimeout(keepAliveTimeoutMs: number | undefined, settings: WanIdleSettings): Promise<WanIdleRow> {
  const rig = await startWanRig(settings, { keepAliveTimeoutMs });
  const { emulator, wan, agent } = rig;
  let client: CosmosClient | undefined;
  try {
    const seeder = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false } });
    await seedContainer(seeder, { database: "bench", container: "items", items: Array.from({ length: 10 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i}` })) });
    seeder.dispose();
    client = new CosmosClient(
      withHedging(
        { endpoint: wan.endpoint, key: emulator.key, agent, connectionPolicy: { preferredLocations: [eastUs, westUs, "North Europe"], enableBackgroundEndpointRefreshing: false } },
        // routing "preferred": the question is West US's connection as a hedge region, so East US stays the primary.
        { crossRegion: { threshold: settings.thresholdMs, routing: "preferred" } },
      ),
    );
    const container = client.database("bench").container("items");
    await container.item("item-0", "pk-0").read();
    await emulator.addFault(eastUs, { operations: ["pointRead"], delayMs: settings.stragglerDelayMs, probability: settings.stragglerShare });
    const reused = new LatencyRecorder();
    const fresh = new LatencyRecorder();
    let wins = 0;
    let freshWins = 0;
    for (let index = 0; index < settings.reads; index++) {
      const began = performance.now();
      const response = await container.item(`item-${index % 10}`, `pk-${index % 10}`).read();
      const took = performance.now() - began;
      const diagnostics = getHedgeDiagnostics(response.headers);
      if (diagnostics?.hedgeWon === true && diagnostics.winningRegion === westUs) {
        wins += 1;
        if (response.headers[connectionRequestHeader] === "1") {
          freshWins += 1;
          fresh.record(took);
        } else {
          reused.record(took);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, settings.pauseMs));
    }
    return {
      keepAliveTimeoutMs,
      westHedgeWins: wins,
      westHedgeWinsOnNewConnection: freshWins,
      onReusedConnection: wins - freshWins > 0 ? reused.valueAt(50) : undefined,
      onNewConnection: freshWins > 0 ? fresh.valueAt(50) : undefined,
      westConnections: (await wan.figures()).regions.find((region) => region.name === westUs)?.counters.tcpConnections ?? 0,
      loadAverage: loadavg()[0] ?? 0,
    };
  } finally {
    await rig.close(client);
  }
}

/** Runs every keep-alive timeout, one after the other. */
export async function runWanIdleSuite(settings: WanIdleSettings = defaultWanIdleSettings): Promise<WanIdleRow[]> {
  const rows: WanIdleRow[] = [];
  for (const timeout of settings.keepAliveTimeoutsMs) {
    console.log(`  idle hedge region, server keep-alive ${timeout === undefined ? "never" : `${timeout} ms`}...`);
    rows.push(await runTimeout(timeout, settings));
  }
  return rows;
}

/** The idle case's Markdown: what was run and the table. */
export function wanIdleSection(rows: readonly WanIdleRow[], settings: WanIdleSettings = defaultWanIdleSettings): string {
  const table = markdownTable(
    [
      "server closes connections idle for",
      "West US hedge wins",
      "of which on a new connection",
      "read answered by a hedge, p50 ms: reused / new connection",
      "West US connections opened",
      "load average",
    ],
    rows.map((row) => [
      row.keepAliveTimeoutMs === undefined ? "never" : `${row.keepAliveTimeoutMs / 1000} s`,
      String(row.westHedgeWins),
      String(row.westHedgeWinsOnNewConnection),
      `${row.onReusedConnection === undefined ? "-" : ms(row.onReusedConnection)} / ${row.onNewConnection === undefined ? "-" : ms(row.onNewConnection)}`,
      String(row.westConnections),
      row.loadAverage.toFixed(1),
    ]),
  );
  return (
    `A quiet client: ${settings.reads} point reads one at a time, ${settings.pauseMs} ms apart, ${settings.stragglerShare * 100} % of East US reads ` +
    `${settings.stragglerDelayMs} ms late, a fixed ${settings.thresholdMs} ms threshold, so West US sees a hedge about once a second and nothing ` +
    `else; each row's WAN fronts close connections idle for the given time. The first West US hedge always opens its connection; a later one ` +
    `opens another only when the gap since the previous hedge outlasted the server's keep-alive timeout, which is all that one warm ` +
    `connection per hedge region could save.\n\n${table}\n`
  );
}
