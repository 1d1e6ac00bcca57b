/**
 * Fault injection in your own tests: put a `faultInjectionPolicy` at the wire
 * end of the hedging client's pipeline, make the preferred region slow (or
 * failing), and assert what your code and the hedging policies do about it.
 * Rules can be added, removed and switched off while the client runs.
 *
 * It is written with `node:test`, so it runs as a test file as it is;
 * `describe`/`it` read the same under mocha.
 *
 * Run: npm run sample -- faultInjection
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { performance } from "node:perf_hooks";
import { CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import { createHedgingHttpClient, getHedgeDiagnostics } from "cosmos-hedging";
import { faultInjectionPolicy } from "cosmos-hedging/testing";
import type { FaultInjectionPolicy } from "cosmos-hedging/testing";
import { openSampleAccount, sampleContainer, since } from "./support/account.js";
import type { SampleAccount } from "./support/account.js";

describe("my repository under a slow preferred region", () => {
  let account: SampleAccount;
  let client: CosmosClient;
  let container: Container;
  let faults: FaultInjectionPolicy;
  let preferred: string;
  let fallback: string;

  before(async () => {
    account = await openSampleAccount();
    [preferred, fallback] = account.preferredLocations as [string, string];
    const hedging = createHedgingHttpClient({ crossRegion: { threshold: 500 }, preferredRegions: account.preferredLocations });
    // Nearest the wire, after the hedging policies, so that every hedge arm meets the rules of its own region.
    faults = faultInjectionPolicy({ regions: hedging.regions, rules: [], seed: 42 });
    hedging.pipeline.addPolicy(faults, { afterPhase: "Sign" });
    client = new CosmosClient({
      endpoint: account.endpoint,
      key: account.key,
      connectionPolicy: { preferredLocations: account.preferredLocations },
      httpClient: hedging,
    });
    container = sampleContainer(client);
    // Load the account and container metadata before any rule is installed.
    await container.item("item-0", "pk-0").read();
  });

  after(async () => {
    client?.dispose();
    await account?.close();
  });

  it("answers from the next region when the preferred one is 2 s late", async () => {
    const slow = faults.addRule({ id: "slow-preferred", region: preferred, operations: ["pointRead"], delayMs: 2000 });
    try {
      const start = performance.now();
      const response = await container.item("item-1", "pk-1").read();
      const ms = since(start);

      assert.equal(response.resource?.["value"], 1);
      assert.ok(ms < 1000, `the read took ${ms} ms`);
      const diagnostics = getHedgeDiagnostics(response.headers);
      assert.equal(diagnostics?.hedgeWon, true);
      assert.equal(diagnostics?.winningRegion, fallback);
      assert.equal(faults.hits(slow.id), 1);
      console.log(`    hedged read: ${ms} ms, served by ${diagnostics?.winningRegion}`);
    } finally {
      faults.removeRule(slow.id);
    }
  });

  it("goes back to the preferred region once the rules are switched off", async () => {
    const slow = faults.addRule({ region: preferred, operations: ["pointRead"], delayMs: 2000 });
    faults.enabled = false;
    try {
      const response = await container.item("item-2", "pk-2").read();

      const diagnostics = getHedgeDiagnostics(response.headers);
      assert.equal(diagnostics?.winningRegion, preferred);
      assert.equal(diagnostics?.hedgeFired, false);
      assert.equal(slow.hits, 0);
      console.log(`    rules off: served by ${diagnostics?.winningRegion}, no hedge`);
    } finally {
      faults.enabled = true;
      faults.removeRule(slow.id);
    }
  });

  it("leaves a 503 of the preferred region to the SDK's own failover", async () => {
    const unavailable = faults.addRule({ region: preferred, operations: ["pointRead"], result: { status: 503 }, count: 1 });
    const start = performance.now();
    const response = await container.item("item-3", "pk-0").read();
    const ms = since(start);

    // The 503 goes back to @azure/cosmos at once, which retries in the next region, unhedged, as it would without hedging.
    const diagnostics = getHedgeDiagnostics(response.headers);
    assert.equal(response.resource?.["value"], 3);
    assert.equal(diagnostics?.hedgeFired, false);
    assert.equal(diagnostics?.arms[0]?.region, fallback);
    assert.equal(unavailable.hits, 1);
    console.log(`    503 in ${preferred}: retried by the SDK in ${diagnostics?.arms[0]?.region}, ${ms} ms`);
  });
});
