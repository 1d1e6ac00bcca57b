import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import https from "node:https";
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { LoserDrainOptions } from "../../src/race/loserDrain.js";
import { connectionRequestHeader, startEmulator, startWan } from "../emulator/index.js";
import type { Emulator, Wan, WanCounters } from "../emulator/index.js";
import { seedContainer } from "../support/cosmos.js";
import { useWanEmulator } from "../support/emulatorFixture.js";

const preferredLocations = ["East US", "West US", "North Europe"];
/** Low round-trip times keep the suite fast; the East US fault, not the RTTs, decides every race here. */
const rttMs = { "East US": 2, "West US": 4, "North Europe": 6 };
const threshold = 50;
/** Far beyond the threshold plus a fresh West US connection (three round trips of 4 ms and the emulator's own time). */
const slowPrimaryMs = 600;

function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const resource of process.getActiveResourcesInfo()) counts.set(resource, (counts.get(resource) ?? 0) + 1);
  return counts;
}

/** Polls until `done` holds; the conditions waited for here come true within a second of the slow primary's delay. */
async function waitFor(what: string, done: () => boolean, limitMs = 10_000): Promise<void> {
  const start = performance.now();
  while (!done()) {
    if (performance.now() - start > limitMs) throw new Error(`${what} did not happen within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("over the WAN mode of the emulator (https, round trips charged per TCP chunk)", function () {
  const fixture = useWanEmulator({ wan: { rttMs }, items: [{ id: "1", pk: "a", value: 1 }] });
  let emulator: Emulator;
  let wan: Wan;

  beforeEach(function () {
    ({ emulator, wan } = fixture);
  });

  interface HedgingSetup {
    readonly container: Container;
    readonly diagnostics: HedgeDiagnostics[];
    close(): void;
  }

  async function hedgingClient(drainLosers: boolean | LoserDrainOptions, tuning: { routing?: "preferred"; threshold?: number } = {}): Promise<HedgingSetup> {
    const agent = new https.Agent({ keepAlive: true, ca: wan.ca });
    const diagnostics: HedgeDiagnostics[] = [];
    const client = new CosmosClient(
      withHedging(
        { endpoint: wan.endpoint, key: emulator.key, agent, connectionPolicy: { preferredLocations, enableBackgroundEndpointRefreshing: false } },
        { crossRegion: { threshold, budget: false, drainLosers, ...tuning }, onDiagnostics: (record) => diagnostics.push(record) },
      ),
    );
    const container = client.database("db").container("items");
    // Warm the SDK's caches and a connection to East US, so that the test measures only its own reads.
    await container.item("1", "a").read();
    return {
      container,
      diagnostics,
      close: () => {
        client.dispose();
        agent.destroy();
      },
    };
  }

  /** A read whose East US primary the emulator holds back, so that the West US hedge wins and East US loses. */
  async function raceLostByEastUs({ container, diagnostics }: HedgingSetup): Promise<HedgeDiagnostics> {
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slowPrimaryMs, count: 1 });
    diagnostics.length = 0;
    const { statusCode } = await container.item("1", "a").read();
    assert.equal(statusCode, 200);
    const record = diagnostics.find((entry) => entry.operation === "pointRead");
    assert.ok(record !== undefined);
    assert.equal(record.winningRegion, "West US");
    return record;
  }

  async function nextEastUsRead(container: Container): Promise<WanCounters> {
    wan.resetCounters();
    const { headers } = await container.item("1", "a").read();
    assert.equal(emulator.region("East US").count("pointRead") > 0, true);
    assert.ok(headers[connectionRequestHeader] !== undefined);
    return wan.region("East US").counters;
  }

  it("the account read through the WAN lists the https WAN endpoints, and the client reads each region over them", async function () {
    const agent = new https.Agent({ keepAlive: true, ca: wan.ca });
    const client = new CosmosClient({
      endpoint: wan.endpoint,
      key: emulator.key,
      agent,
      connectionPolicy: { preferredLocations: ["North Europe"], enableBackgroundEndpointRefreshing: false },
    });
    try {
      const account = await client.getDatabaseAccount();
      assert.deepEqual(
        account.resource?.readableLocations.map((location) => [location.name, location.databaseAccountEndpoint]),
        wan.regions.map((region) => [region.name, region.endpoint]),
      );
      assert.ok(wan.regions.every((region) => region.endpoint.startsWith("https://127.0.0.1:")));
      wan.resetCounters();
      emulator.resetCounters();
      await client.database("db").container("items").item("1", "a").read();
      assert.equal(emulator.region("North Europe").count("pointRead"), 1);
      const counters = wan.region("North Europe").counters;
      assert.equal(counters.tcpConnections, 1);
      assert.equal(counters.fullHandshakes + counters.resumedHandshakes, 1);
    } finally {
      client.dispose();
      agent.destroy();
    }
  });

  it("charges the round trips: a new connection costs TCP and TLS round trips on top of the request's own", async function () {
    wan.region("West US").rttMs = 100;
    const agent = new https.Agent({ keepAlive: true, ca: wan.ca });
    const request = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const start = performance.now();
        https
          .get(new URL("/", wan.region("West US").endpoint), { agent }, (res) => {
            res.resume();
            res.on("end", () => resolve(performance.now() - start));
          })
          .on("error", reject);
      });
    try {
      const fresh = await request();
      const reused = await request();
      // Lower bounds only: timers never fire early (save for Node's millisecond rounding), however loaded the machine.
      assert.ok(fresh >= 3 * 100 - 5, `a request on a new TLS 1.3 connection took ${fresh.toFixed(0)} ms, under 3 round trips`);
      assert.ok(reused >= 100 - 5, `a request on a pooled connection took ${reused.toFixed(0)} ms, under 1 round trip`);
      assert.deepEqual(wan.region("West US").counters, { tcpConnections: 1, fullHandshakes: 1, resumedHandshakes: 0 });
    } finally {
      wan.region("West US").rttMs = rttMs["West US"];
      agent.destroy();
    }
  });

  it("a decided race leaves its loser's socket in the pool: the next read to the loser's region opens no connection and no handshake", async function () {
    const setup = await hedgingClient(true);
    try {
      const record = await raceLostByEastUs(setup);
      assert.equal(record.arms[0]?.outcome, "drained");
      await waitFor("the drained East US loser's end", () => record.arms[0]?.drainEnd !== undefined);
      assert.equal(record.arms[0]?.drainEnd, "settled");
      assert.equal(record.arms[0]?.status, 200);
      const counters = await nextEastUsRead(setup.container);
      assert.deepEqual(counters, { tcpConnections: 0, fullHandshakes: 0, resumedHandshakes: 0 });
    } finally {
      setup.close();
    }
  });

  it("with drainLosers: false the aborted loser's socket is destroyed: the next read to its region opens a new connection", async function () {
    const setup = await hedgingClient(false);
    try {
      const record = await raceLostByEastUs(setup);
      assert.equal(record.arms[0]?.outcome, "aborted");
      const counters = await nextEastUsRead(setup.container);
      assert.equal(counters.tcpConnections, 1);
      assert.equal(counters.fullHandshakes + counters.resumedHandshakes, 1);
    } finally {
      setup.close();
    }
  });

  it("a loser cut off at maxDrainBytes by the real transport loses its socket too", async function () {
    const setup = await hedgingClient({ maxDrainBytes: 1 });
    try {
      const record = await raceLostByEastUs(setup);
      assert.equal(record.arms[0]?.outcome, "drained");
      await waitFor("the drained East US loser's end", () => record.arms[0]?.drainEnd !== undefined);
      assert.equal(record.arms[0]?.drainEnd, "byteLimit");
      const counters = await nextEastUsRead(setup.container);
      assert.equal(counters.tcpConnections, 1);
    } finally {
      setup.close();
    }
  });

  /**
   * Four reads whose East US primaries straggle for `stragglerMs` and lose to West US, then, while those
   * losers still run, four reads that East US answers at once.
   * @returns the connections and handshakes the round cost East US.
   */
  async function stragglerRound(setup: HedgingSetup, stragglerMs: number): Promise<WanCounters> {
    wan.resetCounters();
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: stragglerMs, count: 4 });
    setup.diagnostics.length = 0;
    const read = (): Promise<unknown> => setup.container.item("1", "a").read();
    await Promise.all([read(), read(), read(), read()]);
    const stragglers = setup.diagnostics.filter((entry) => entry.operation === "pointRead");
    assert.deepEqual(stragglers.map((entry) => entry.winningRegion), ["West US", "West US", "West US", "West US"]);
    setup.diagnostics.length = 0;
    await Promise.all([read(), read(), read(), read()]);
    // East US answered them: the pool the round cost is East US's.
    assert.deepEqual(setup.diagnostics.map((entry) => entry.winningRegion), ["East US", "East US", "East US", "East US"]);
    await waitFor("the East US losers' end", () => stragglers.every((entry) => entry.arms[0]?.outcome !== "drained" || entry.arms[0]?.drainEnd !== undefined));
    return wan.region("East US").counters;
  }

  it("draining grows a straggling region's pool once: the same load again opens no connection, where aborting opens one per loser every time", async function () {
    // The reads after the stragglers run while the losers do, and East US answers them before the threshold even on
    // a new connection, however loaded the machine; routing: "preferred" keeps East US the primary after its losses.
    const stragglerMs = 2500;
    const tuning = { routing: "preferred", threshold: 400 } as const;
    this.timeout(30_000);
    const drained = await hedgingClient(true, tuning);
    try {
      const first = await stragglerRound(drained, stragglerMs);
      assert.ok(first.tcpConnections >= 4, `the first round opened ${first.tcpConnections} East US connections`);
      assert.ok(wan.region("East US").openConnections >= 8);
      const second = await stragglerRound(drained, stragglerMs);
      assert.deepEqual(second, { tcpConnections: 0, fullHandshakes: 0, resumedHandshakes: 0 });
    } finally {
      drained.close();
    }
    const aborted = await hedgingClient(false, tuning);
    try {
      await stragglerRound(aborted, stragglerMs);
      const second = await stragglerRound(aborted, stragglerMs);
      assert.equal(second.tcpConnections, 4);
      assert.equal(second.fullHandshakes + second.resumedHandshakes, 4);
    } finally {
      aborted.close();
    }
  });

  it("a front with keepAliveTimeoutMs closes a connection left idle for longer, and the next request opens a new one", async function () {
    const ownWan = await startWan(emulator, { rttMs, keepAliveTimeoutMs: 200 });
    const agent = new https.Agent({ keepAlive: true, ca: ownWan.ca });
    const west = ownWan.region("West US");
    const request = (): Promise<void> =>
      new Promise((resolve, reject) => {
        https
          .get(new URL("/", west.endpoint), { agent }, (res) => {
            res.resume();
            res.on("end", () => resolve());
          })
          .on("error", reject);
      });
    try {
      await request();
      assert.equal(west.openConnections, 1);
      await waitFor("the front closing the idle connection", () => west.openConnections === 0);
      await request();
      assert.equal(west.counters.tcpConnections, 2);
      await assert.rejects(startWan(emulator, { keepAliveTimeoutMs: 0 }), /keepAliveTimeoutMs must be a finite number > 0; got 0/);
    } finally {
      agent.destroy();
      await ownWan.close();
    }
  });

  it("leaves no handle or timer behind once the client, the agent and the WAN are closed", async function () {
    // Mocha arms this test's timeout only after the test function first yields; count it in the baseline.
    await new Promise((resolve) => setImmediate(resolve));
    const before = resourceCounts();
    const ownEmulator = await startEmulator();
    const ownWan = await startWan(ownEmulator, { rttMs });
    const agent = new https.Agent({ keepAlive: true, ca: ownWan.ca });
    const client = new CosmosClient(
      withHedging(
        { endpoint: ownWan.endpoint, key: ownEmulator.key, agent, connectionPolicy: { preferredLocations, enableBackgroundEndpointRefreshing: false } },
        { crossRegion: { threshold } },
      ),
    );
    const container = await seedContainer(client, { database: "db", container: "items", items: [{ id: "1", pk: "a" }] });
    // A race whose loser is still draining, and a request still delayed, when everything closes.
    ownEmulator.region("East US").addFault({ operations: ["pointRead"], delayMs: 10_000 });
    await container.item("1", "a").read();
    client.dispose();
    agent.destroy();
    await ownWan.close();
    await ownEmulator.close();
    // Closed handles leave the list on the turn after they close.
    await new Promise((resolve) => setImmediate(resolve));
    const after = resourceCounts();
    for (const [resource, count] of after) {
      assert.ok(count <= (before.get(resource) ?? 0), `${resource}: ${before.get(resource) ?? 0} before, ${count} after`);
    }
  });

  it("a script that reads through a hedging client, with a loser still draining, and returns exits by itself", async function () {
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slowPrimaryMs });
    const script = fileURLToPath(new URL("../support/wanReader.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      env: { ...process.env, WAN_ENDPOINT: wan.endpoint, WAN_CA: wan.ca, WAN_KEY: emulator.key, WAN_THRESHOLD: String(threshold) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const timeout = new Promise<"still running">((resolve) => {
      const timer = setTimeout(() => resolve("still running"), 20_000);
      void exited.then(() => clearTimeout(timer));
    });
    const result = await Promise.race([exited, timeout]);
    if (result === "still running") child.kill();
    assert.equal(result, 0, `the script ${result === "still running" ? "did not exit within 20 s" : `exited with ${result}`}: ${output}`);
    assert.match(output, /West US drained/);
  });
});
