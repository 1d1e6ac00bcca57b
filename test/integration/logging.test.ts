import assert from "node:assert/strict";
import type { CosmosClient } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { createTestClient } from "../support/cosmos.js";
import { captureAzureLogs } from "../support/logCapture.js";
import type { LogCapture } from "../support/logCapture.js";

describe("what AZURE_LOG_LEVEL shows of a hedging CosmosClient", function () {
  let emulator: Emulator;
  let client: CosmosClient | undefined;
  let logs: LogCapture | undefined;

  const fixture = useEmulator({ items: [{ id: "1", pk: "a" }] });

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  afterEach(function () {
    client?.dispose();
    logs?.restore();
    emulator.clearFaults();
  });

  function hedgingClient(): CosmosClient {
    client = createTestClient(
      emulator,
      withHedging({ endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { preferredLocations: ["West US", "East US"] } }, { crossRegion: { threshold: 100 } }),
    );
    return client;
  }

  it("at info: the client's settings and the topology it learned, then nothing per request", async function () {
    logs = captureAzureLogs("info");
    const container = hedgingClient().database("db").container("items");
    for (let i = 0; i < 10; i++) await container.item("1", "a").read();
    assert.deepEqual(
      logs.packageLines().map((line) => line.replace(/^azure:cosmos-hedging:info /, "")),
      [
        "Hedging client created: data-plane reads hedged after 100 ms, then every 100 ms; metadata reads hedged after 1500 ms.",
        "Learned the account's topology: read regions East US, West US, North Europe; write regions East US; multi-write off; per-partition automatic failover off.",
      ],
    );
  });

  it("at verbose: each hedge and how it ended", async function () {
    const container = hedgingClient().database("db").container("items");
    await container.item("1", "a").read();
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 2000 });
    logs = captureAzureLogs("verbose");
    await container.item("1", "a").read();
    const hedges = logs.packageLines().filter((line) => line.startsWith("azure:cosmos-hedging:crossRegionHedgingPolicy:verbose pointRead: hedged"));
    assert.equal(hedges.length, 1, logs.packageLines().join("\n"));
    assert.match(hedges[0]!, /pointRead: hedged at 1\d\d ms \(threshold\); hedgeWon by East US in \d+ ms \(arms: West US primary - drained, East US threshold 200 returned; [\d.]+ RU so far, not final: a drained arm's charge is still to come\)\.$/);
  });
});
