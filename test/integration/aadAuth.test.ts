import assert from "node:assert/strict";
import https from "node:https";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator, Wan } from "../emulator/index.js";
import { useWanEmulator } from "../support/emulatorFixture.js";
import { captureAzureLogs } from "../support/logCapture.js";

const preferredLocations = ["East US", "West US", "North Europe"];
const aadToken = "emulator-aad-token";
/** Far beyond the threshold and the WAN's round trips: only a hedge answers before it. */
const slowMs = 1500;
const threshold = 100;
/** A second hedge only after seconds: each race has the arms its test expects (a hedge's new TLS connection takes a while on a loaded machine). */
const thresholdStep = 5000;

/**
 * With `aadCredentials`, @azure/cosmos sends through a pipeline of its own
 * (core's bearer-token policy, which awaits the token): the request reaches
 * the hedging client after an `await`, so the request plugin cannot hand
 * the SDK's options over in the same run and writes them in headers. The
 * bearer policy refuses plain HTTP, so these tests run over the emulator's
 * HTTPS (WAN) fronts.
 */
describe("Entra ID (aadCredentials): the SDK's options reach the hedging client through headers", function () {
  const fixture = useWanEmulator({ emulator: { aadToken }, items: [{ id: "1", pk: "a", value: 1 }] });
  let emulator: Emulator;
  let wan: Wan;
  const clients: CosmosClient[] = [];
  const agents: https.Agent[] = [];

  beforeEach(function () {
    ({ emulator, wan } = fixture);
  });

  afterEach(function () {
    for (const client of clients.splice(0)) client.dispose();
    for (const agent of agents.splice(0)) agent.destroy();
  });

  function options(): CosmosClientOptions {
    const agent = new https.Agent({ keepAlive: true, ca: wan.ca });
    agents.push(agent);
    return {
      endpoint: wan.endpoint,
      aadCredentials: { getToken: async () => ({ token: aadToken, expiresOnTimestamp: Date.now() + 3_600_000 }) },
      agent,
      connectionPolicy: { preferredLocations, enableBackgroundEndpointRefreshing: false },
    };
  }

  async function containerOf(cosmosOptions: CosmosClientOptions): Promise<Container> {
    const client = new CosmosClient(cosmosOptions);
    clients.push(client);
    const container = client.database("db").container("items");
    // Warm the SDK's caches, so that the test's read is the only request of its kind.
    await container.item("1", "a").read();
    emulator.resetCounters();
    return container;
  }

  function arrivals(): Record<string, number> {
    return Object.fromEntries(emulator.regions.map((region) => [region.name, region.count(["pointRead"])]));
  }

  it("hedges a slow East US read to West US, with its detection record, where plain @azure/cosmos waits", async function () {
    const logs = captureAzureLogs("warning");
    try {
      const diagnostics: HedgeDiagnostics[] = [];
      const plain = await containerOf(options());
      const hedged = await containerOf(withHedging(options(), { crossRegion: { threshold, thresholdStep, budget: false }, onDiagnostics: (record) => diagnostics.push(record) }));
      emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slowMs });

      const plainStart = performance.now();
      const plainRead = await plain.item("1", "a").read();
      const plainMs = performance.now() - plainStart;
      const hedgedRead = await hedged.item("1", "a").read();

      assert.equal(hedgedRead.statusCode, plainRead.statusCode);
      assert.deepEqual(hedgedRead.resource?.value, plainRead.resource?.value);
      assert.ok(plainMs >= slowMs, `plain waited for East US (${plainMs.toFixed(0)} ms)`);
      assert.equal(diagnostics.at(-1)?.winningRegion, "West US");
      const detection = getHedgingDetection(hedgedRead);
      assert.deepEqual(detection?.requestedRegions().map(({ region, reason }) => [region, reason]), [
        ["East US", "initial"],
        ["West US", "hedging"],
      ]);
      assert.ok(emulator.regions.every((region) => region.requests.every((request) => !Object.keys(request.headers).some((name) => name.startsWith("x-cosmos-hedging")))), "no control header reached the service");
      assert.ok(emulator.regions.every((region) => region.requests.every((request) => request.authorization === "valid")), "every arm carried the SDK's bearer token");
      const lines = logs.packageLines();
      assert.ok(!lines.some((line) => line.includes("without the request plugin") || line.includes("did not hand its request")), lines.join("\n"));
    } finally {
      logs.restore();
    }
  });

  it("the SDK's excludedLocations bind the hedge: it skips West US for North Europe", async function () {
    const diagnostics: HedgeDiagnostics[] = [];
    const hedged = await containerOf(withHedging(options(), { crossRegion: { threshold, thresholdStep, budget: false }, onDiagnostics: (record) => diagnostics.push(record) }));
    emulator.region("East US").addFault({ operations: ["pointRead"], delayMs: slowMs });
    const { resource } = await hedged.item("1", "a").read({ excludedLocations: ["West US"] });
    assert.equal(resource?.value, 1);
    assert.equal(arrivals()["West US"], 0, "nothing went to the excluded region");
    assert.equal(diagnostics.at(-1)?.winningRegion, "North Europe");
  });
});
