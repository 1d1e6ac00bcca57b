import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const preferredLocations = ["West US", "East US", "North Europe"];

describe("withHedging(options) alone, through the real CosmosClient", function () {
  let emulator: Emulator;
  const clients: CosmosClient[] = [];
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  /** A cold client made by `withHedging`: without a second argument, as a user writes it, or with these hedging options. */
  function hedgingClient(hedging?: HedgingOptions): CosmosClient {
    const base = {
      endpoint: emulator.endpoint,
      key: emulator.key,
      connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations },
    };
    const client = new CosmosClient(hedging === undefined ? withHedging(base) : withHedging(base, hedging));
    clients.push(client);
    return client;
  }

  const fixture = useEmulator({ items: [{ id: "1", pk: "a" }] });

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  beforeEach(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
    emulator.setAccount({ perPartitionFailover: false });
    emulator.clearFaults();
    emulator.resetCounters();
  });

  afterEach(function () {
    for (const client of clients.splice(0)) client.dispose();
    emulator.clearFaults();
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  it("hedges point reads with the explicit defaults (500 ms, step 100 ms) on an account without per-partition failover", async function () {
    const client = hedgingClient();
    const container = client.database("db").container("items");
    await container.read();
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 3000 });
    const response = await container.item("1", "a").read();
    assert.equal(response.statusCode, 200);
    const diagnostics = getHedgeDiagnostics(response.headers);
    assert.ok(diagnostics !== undefined, "diagnostics are in response.headers");
    assert.equal(diagnostics.skipReason, undefined);
    assert.equal(diagnostics.thresholdMs, 500);
    assert.equal(diagnostics.thresholdStepMs, 100);
    assert.equal(diagnostics.thresholdSource, "options");
    assert.equal(diagnostics.hedgeWon, true);
    assert.equal(diagnostics.winningRegion, "East US");
    const hedge = diagnostics.arms[1];
    assert.ok(hedge !== undefined && hedge.startOffsetMs >= 495, `the hedge went out at ${hedge?.startOffsetMs} ms, before the 500 ms default`);
  });

  it("hedges the Collection read with the metadata default (1500 ms) on an account without per-partition failover", async function () {
    emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: 4000 });
    const client = hedgingClient();
    const response = await client.database("db").container("items").read();
    assert.equal(response.statusCode, 200);
    const diagnostics = getHedgeDiagnostics(response.headers);
    assert.ok(diagnostics !== undefined, "diagnostics are in response.headers");
    assert.equal(diagnostics.policy, "metadata");
    assert.equal(diagnostics.thresholdMs, 1500);
    assert.equal(diagnostics.hedgeWon, true);
    assert.equal(diagnostics.winningRegion, "East US");
  });

  it('with "followAccount" sends nothing twice while the account has no per-partition failover', async function () {
    const seen: HedgeDiagnostics[] = [];
    const client = hedgingClient({ crossRegion: "followAccount", metadata: "followAccount", onDiagnostics: (record) => seen.push(record) });
    emulator.region("West US").addFault({ operations: ["pointRead", "collectionRead"], delayMs: 700 });
    const response = await client.database("db").container("items").item("1", "a").read();
    assert.equal(response.statusCode, 200);
    const considered = seen.filter((record) => record.operation === "pointRead" || record.operation === "collectionRead");
    assert.ok(considered.some((record) => record.operation === "pointRead"), "the point read was considered");
    for (const record of considered) {
      assert.equal(record.skipReason, "disabled", `${record.operation} was not left unhedged: ${JSON.stringify(record)}`);
      assert.equal(record.hedgeFired, false);
    }
    assert.equal(emulator.region("East US").count(["pointRead", "collectionRead"]), 0);
    assert.equal(emulator.region("North Europe").count(["pointRead", "collectionRead"]), 0);
  });

  it('with "followAccount" hedges with the .NET defaults once the account reports per-partition failover', async function () {
    emulator.setAccount({ perPartitionFailover: true });
    const client = hedgingClient({ crossRegion: "followAccount", metadata: "followAccount" });
    const container = client.database("db").container("items");
    await container.read();
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 3000 });
    const response = await container.item("1", "a").read();
    const diagnostics = getHedgeDiagnostics(response.headers);
    assert.ok(diagnostics !== undefined, "diagnostics are in response.headers");
    assert.equal(diagnostics.thresholdSource, "ppafDefault");
    assert.equal(diagnostics.thresholdMs, 1000);
    assert.equal(diagnostics.thresholdStepMs, 500);
    assert.equal(diagnostics.hedgeWon, true);
  });

  it("rejects a crossRegion or metadata setting that is none of the accepted ones, naming it", function () {
    const base = { endpoint: emulator.endpoint, key: emulator.key };
    assert.throws(() => withHedging(base, { crossRegion: "follow" as never }), /crossRegion must be a boolean, "followAccount" or an options object; got "follow"/);
    assert.throws(() => withHedging(base, { metadata: "always" as never }), /metadata must be a boolean, "followAccount" or an options object; got "always"/);
  });
});
